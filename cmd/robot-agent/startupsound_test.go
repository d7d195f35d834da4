package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/warmup"
)

// The agent as a user runs it with duplex.startup_sound: noise: the log
// says so and the speaker plays the built-in sound at its level first
// (the median 10 ms frame of its first 4 s, where a run without it plays
// next to nothing).
func TestRunPlaysTheStartupSound(t *testing.T) {
	if aec.Best() == aec.KindNone {
		t.Skip("no echo canceller built in (tags webrtcapm or speexdsp): no start-up sound in half duplex")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		sound string
		level float64 // median frame level of 0.1-3.9 s, dBFS
	}{{"noise", warmup.DefaultDBFS}, {"", -60}} {
		cfg := filepath.Join(dir, "c.yaml")
		os.WriteFile(cfg, []byte("duplex:\n  startup_sound: \""+tc.sound+"\"\n"), 0o644)
		played := filepath.Join(dir, "p.wav")
		code, _, errs := runCLI("run", "--sim", "--config", cfg, "--duration", "5s", "--speaker-wav", played, "--log-level", "info")
		logged := strings.Contains(errs, "duplex: start-up sound")
		if code != 0 || logged != (tc.sound != "") {
			t.Fatalf("startup_sound %q: exit %d, start-up sound logged %v:\n%s", tc.sound, code, logged, errs)
		}
		a, err := wav.ReadFile(played)
		if err != nil {
			t.Fatal(err)
		}
		frame := a.SampleRate / 100
		var levels []float64
		for k := a.SampleRate / 10; k+frame <= min(len(a.Samples), a.SampleRate*39/10); k += frame {
			var e float64
			for _, v := range a.Samples[k : k+frame] {
				e += float64(v) * float64(v)
			}
			levels = append(levels, 10*math.Log10(e/float64(frame)+1e-9)-90.309)
		}
		if len(levels) < 300 {
			t.Fatalf("startup_sound %q: %d frames played in the first 4 s", tc.sound, len(levels))
		}
		slices.Sort(levels)
		med := levels[len(levels)/2]
		t.Logf("startup_sound %q: median frame of the first 4 s at %.1f dBFS", tc.sound, med)
		if tc.sound != "" && math.Abs(med-tc.level) > 2 || tc.sound == "" && med > tc.level {
			t.Errorf("startup_sound %q: the first 4 s played at %.1f dBFS (median 10 ms frame), want %.0f", tc.sound, med, tc.level)
		}
	}
}

// A start-up sound that cannot be played is a configuration error named
// by its key, on one line, exit 2.
func TestStartupSoundConfigErrors(t *testing.T) {
	dir := t.TempDir()
	silent := filepath.Join(dir, "silent.wav")
	if err := wav.WriteFile(silent, 16000, 1, make([]int16, 16000)); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.wav")
	if err := wav.WriteFile(short, 16000, 1, make([]int16, 800)); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.wav")
	for _, tc := range []struct{ value, want string }{
		{"chime.wav", `duplex.startup_sound: "chime.wav": must be an absolute path`},
		{missing, `duplex.startup_sound: "` + missing + `": `},
		{silent, `duplex.startup_sound: "` + silent + `": silent`},
		{short, `duplex.startup_sound: "` + short + `": 0.05 s long: want 0.1 s up to 30s`},
	} {
		cfg := filepath.Join(dir, "c.yaml")
		os.WriteFile(cfg, []byte("duplex:\n  startup_sound: "+tc.value+"\n"), 0o644)
		code, _, errs := runCLI("run", "--sim", "--config", cfg, "--duration", "1s")
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("startup_sound %q: exit %d, stderr %q: want 2 and %q", tc.value, code, errs, tc.want)
		}
	}
}
