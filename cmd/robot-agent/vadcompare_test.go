package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/duplex"
)

func TestVADCompareFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vad-noises", "pink,rain"}, `--vad-noises: "rain"`},
		{[]string{"--vad-snrs", "5,loud"}, `--vad-snrs: "loud"`},
		{[]string{"--vad-seeds", "0"}, "--vad-seeds 0"},
		{[]string{"--vad-min-speech-ms", "-20"}, "--vad-min-speech-ms -20"},
		{[]string{"--vad-idle-s", "-1"}, "--vad-idle-s -1"},
		{[]string{"--vad-detectors", "energy,neural"}, `kind "neural"`},
		{[]string{"--vad-detectors", "webrtc:x"}, `mode "x"`},
		{[]string{"--near", "/nonexistent/a.wav"}, `--near "/nonexistent/a.wav"`},
	} {
		code, _, errs := runCLI(append([]string{"duplex-bench", "--vad-compare"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errs, tc.want) || !strings.HasPrefix(errs, "robot-agent: duplex-bench: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}

// --vad-compare takes a list of any WAVs and prints a row per detector,
// noise and SNR.
func TestVADCompareRuns(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, rate := range []int{16000, 22050} {
		s := duplex.Synthetic(1200*time.Millisecond, uint64(i+1))
		if rate != 16000 {
			s = duplex.ToMono(wav.Audio{SampleRate: 16000, Channels: 1, Samples: s}, rate)
		}
		p := filepath.Join(dir, fmt.Sprintf("near%d.wav", i))
		f, _ := os.Create(p)
		w, _ := wav.NewWriter(f, rate, 1)
		w.Write(s)
		w.Close()
		f.Close()
		paths = append(paths, p)
	}
	code, stdout, errs := runCLI("duplex-bench", "--vad-compare", "--near", strings.Join(paths, ","), "--replies", "2", "--vad-seeds", "1",
		"--vad-noises", "pink,motor", "--vad-snrs", "10", "--vad-detectors", "energy,spectral,spectral:50", "--vad-min-speech-ms", "40", "--vad-idle-s", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "2 near-end phrases (files) x 2 trials x 1 seeds") || !strings.Contains(stdout, "min speech 40 ms") {
		t.Errorf("header:\n%s", stdout)
	}
	rows := 0
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && (f[0] == "energy" || f[0] == "spectral" || f[0] == "spectral:50") && (f[1] == "pink" || f[1] == "motor") && f[2] == "10" {
			rows++
		}
	}
	if n := strings.Count(stdout, "in 6 s)"); n != 6 {
		t.Errorf("%d rows with idle starts in 6 s of noise alone (2 phrases x 1 seed x 3 s), want 6:\n%s", n, stdout)
	}
	if rows != 6 {
		t.Errorf("%d result rows, want 6:\n%s", rows, stdout)
	}
}
