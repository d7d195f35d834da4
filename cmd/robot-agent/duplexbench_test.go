package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/codec/wav"
)

func TestDuplexBenchStartupFailures(t *testing.T) {
	dir := t.TempDir()
	notWAV := filepath.Join(dir, "x.wav")
	os.WriteFile(notWAV, []byte("not a wav file"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--aec", "magic"}, `--aec "magic" is not one of`},
		{[]string{"--delay-ms", "-5"}, "delay_ms -5"},
		{[]string{"--noise", "rain"}, `noise "rain"`},
		{[]string{"--replies", "0"}, "--replies 0"},
		{[]string{"--far", filepath.Join(dir, "missing.wav")}, "--far"},
		{[]string{"--near", notWAV}, "--near"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, _, errs := runCLI(append([]string{"duplex-bench"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errs, tc.want) || !strings.HasPrefix(errs, "robot-agent: duplex-bench: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}

// The bench takes any WAV files (here stereo 44.1 kHz) and writes the uplink.
func TestDuplexBenchAnyWAVs(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, rate, ch int, secs float64) string {
		p := filepath.Join(dir, name)
		f, _ := os.Create(p)
		w, _ := wav.NewWriter(f, rate, ch)
		s := make([]int16, int(secs*float64(rate))*ch)
		for i := range s {
			s[i] = int16((i * 7919 % 6000) - 3000)
		}
		w.Write(s)
		w.Close()
		f.Close()
		return p
	}
	far, near := mk("far.wav", 44100, 2, 2), mk("near.wav", 8000, 1, 0.8)
	out := filepath.Join(dir, "up.wav")
	code, stdout, errs := runCLI("duplex-bench", "--far", far, "--near", near, "--replies", "2", "--barge-in", "--aec", "none", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "speech files") || !strings.Contains(stdout, "\nnone ") {
		t.Errorf("output:\n%s", stdout)
	}
	a, err := wav.ReadFile(out)
	if err != nil || a.SampleRate != 16000 || a.Frames() < 16000 {
		t.Errorf("uplink WAV: %v %+v", err, a.SampleRate)
	}
}

func TestDuplexConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "c.yaml")
	os.WriteFile(bad, []byte("duplex:\n  aec: magic\n  double_talk_db: 99\n  noise_guard_db: -3\n  linear_guard_db: 41\n  uplink: magic\n  duck:\n    hold_ms: 5\n  sim_room:\n    delay_ms: 9999\n"), 0o644)
	code, _, errs := runCLI("run", "--sim", "--duration", "1s", "--config", bad)
	// Every problem at once, in the yaml.path: value: problem form.
	for _, want := range []string{`duplex.aec: "magic": want auto, none, webrtc, speex`, "duplex.double_talk_db: 99: want 0..60",
		"duplex.noise_guard_db: -3: want 0..40", "duplex.linear_guard_db: 41: want 0..40", `duplex.uplink: "magic": want auto, canceller, linear or linear-gated`,
		"duplex.duck.hold_ms: 5: want 50..30000", "duplex.sim_room.delay_ms: 9999: out of range"} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr %q: want %q", code, errs, want)
		}
	}
	typo := filepath.Join(dir, "t.yaml")
	os.WriteFile(typo, []byte("duplex:\n  aecc: none\n  duck:\n    enable: true\n"), 0o644)
	code, _, errs = runCLI("run", "--sim", "--duration", "1s", "--config", typo)
	for _, want := range []string{`duplex.aecc: unknown key (did you mean aec?; line 2)`, `duplex.duck.enable: unknown key (did you mean enabled?; line 4)`} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("typo: exit %d, stderr %q: want %q", code, errs, want)
		}
	}
}
