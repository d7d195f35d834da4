package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		{[]string{"--vad-warmup-s", "601"}, "--vad-warmup-s 601 out of range 0..600"},
		{[]string{"--vad-transient-db", "25"}, "--vad-transient-db 25 out of range: at most 20"},
		{[]string{"--vad-gradual-ms", "1001"}, "--vad-gradual-ms 1001 out of range: at most 1000"},
		{[]string{"--vad-lookahead-ms", "0,30"}, `--vad-lookahead-ms: "30" is not a multiple of 20 in 0..1000`},
		{[]string{"--vad-lookahead-ms", "soon"}, `--vad-lookahead-ms: "soon"`},
		{[]string{"--vad-lookahead-ms", "1020"}, `--vad-lookahead-ms: "1020"`},
		{[]string{"--vad-noises", "knocks,hail"}, `--vad-noises: "hail"`},
		{[]string{"--vad-detectors", "energy,neural"}, `kind "neural"`},
		{[]string{"--vad-detectors", "webrtc:x"}, `mode "x"`},
		{[]string{"--vad-detectors", "spectral/loud"}, `background guard "loud"`},
		{[]string{"--vad-detectors", "spectral/0"}, `background guard "0"`},
		{[]string{"--vad-detectors", "spectral/50"}, "background guard 50 dB out of range"},
		{[]string{"--vad-detectors", "energy+fast"}, "+fast (the onset step) is for spectral and voiced only"},
		{[]string{"--near", "/nonexistent/a.wav"}, `--near "/nonexistent/a.wav"`},
		{[]string{"--vad-noise-wav", "/nonexistent/n.wav"}, `--vad-noise-wav "/nonexistent/n.wav"`},
		{[]string{"--vad-noises", ""}, "both empty"},
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
		"--vad-noises", "pink,motor", "--vad-snrs", "10", "--vad-detectors", "energy,spectral,spectral:50/-1", "--vad-min-speech-ms", "40", "--vad-idle-s", "3", "--vad-transient-db", "-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "2 near-end phrases (files) x 2 trials x 1 seeds") || !strings.Contains(stdout, "min speech 40 ms, transient guard off, gradual start off") {
		t.Errorf("header:\n%s", stdout)
	}
	rows, ahead := 0, 0
	var last []string // the detector's own row before its +la40 row
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		if len(f) < 12 || (f[1] != "pink" && f[1] != "motor") || f[2] != "10" {
			continue
		}
		switch f[0] {
		case "energy", "spectral", "spectral:50/-1":
			rows++
			last = f
		case "energy+la40", "spectral+la40", "spectral:50/-1+la40":
			ahead++
			// Same onsets, clipped phrases and starts (the columns after
			// the three frame counts, fields 4-9): a lookahead changes frame
			// counts only.
			if last == nil || last[0]+"+la40" != f[0] || !slices.Equal(last[10:], f[10:]) {
				t.Errorf("lookahead row %v after %v", f, last)
			}
		}
	}
	if n := strings.Count(stdout, "in 6 s)"); n != 12 {
		t.Errorf("%d rows with idle starts in 6 s of noise alone (2 phrases x 1 seed x 3 s, and the lookahead rows), want 12:\n%s", n, stdout)
	}
	if rows != 6 || ahead != 6 {
		t.Errorf("%d result rows and %d lookahead rows, want 6 and 6 (the default --vad-lookahead-ms 0,40):\n%s", rows, ahead, stdout)
	}
}

// --vad-noise-wav adds a row per recorded noise, looped under the phrases.
func TestVADCompareNoiseWAV(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, s []int16) string { return writeMonoWAV(t, filepath.Join(dir, name), s) }
	near := write("near.wav", duplex.Synthetic(1200*time.Millisecond, 1))
	noise := write("talkers.wav", duplex.Synthetic(700*time.Millisecond, 7)) // shorter than the scene: looped
	silent := write("silent.wav", make([]int16, 16000))
	code, stdout, errs := runCLI("duplex-bench", "--vad-compare", "--near", near, "--replies", "2", "--vad-seeds", "2",
		"--vad-noises", "", "--vad-noise-wav", noise, "--vad-snrs", "10", "--vad-detectors", "spectral")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := 0
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[0] == "spectral" {
			if f[1] != "wav:talkers.wav" {
				t.Errorf("row %q: noise %q, want wav:talkers.wav", l, f[1])
			}
			rows++
		}
	}
	if rows != 1 {
		t.Errorf("%d rows, want 1:\n%s", rows, stdout)
	}
	code, _, errs = runCLI("duplex-bench", "--vad-compare", "--near", near, "--vad-noise-wav", silent)
	if code != 2 || !strings.Contains(errs, "silent") {
		t.Errorf("silent noise WAV: exit %d, stderr %q", code, errs)
	}
}
