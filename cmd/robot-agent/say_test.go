package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/codec/wav"
)

// writeTone writes a WAV of a sine at freq Hz, amplitude amp (0..1).
func writeTone(t *testing.T, path string, rate, channels int, freq, secs, amp float64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := wav.NewWriter(f, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	n := int(secs * float64(rate))
	buf := make([]int16, n*channels)
	for i := 0; i < n; i++ {
		v := int16(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
		for c := 0; c < channels; c++ {
			buf[i*channels+c] = v
		}
	}
	if err := w.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// toneOf returns the RMS (0..1) and the frequency (from zero crossings)
// of the audible part of s, in 10 ms blocks: silent blocks (the start, the
// end, a gap from a device underrun on a loaded machine) are left out.
func toneOf(s []int16, rate int) (rms, freq float64) {
	block := rate / 100
	var sum float64
	cross, n := 0, 0
	for off := 0; off+block <= len(s); off += block {
		b := s[off : off+block]
		var e float64
		for _, v := range b {
			e += float64(v) * float64(v)
		}
		if math.Sqrt(e/float64(block)) < 1000 {
			continue
		}
		sum += e
		n += block
		for i := 1; i < len(b); i++ {
			if (b[i-1] < 0) != (b[i] < 0) {
				cross++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return math.Sqrt(sum/float64(n)) / 32768, float64(cross) / 2 / (float64(n) / float64(rate))
}

func TestSayFailures(t *testing.T) {
	dir := t.TempDir()
	notWAV := filepath.Join(dir, "notes.txt")
	os.WriteFile(notWAV, []byte("hello, not audio\n"), 0o644)
	empty := filepath.Join(dir, "empty.wav")
	writeTone(t, empty, 16000, 1, 440, 0, 0.5)
	tone := filepath.Join(dir, "tone.wav")
	writeTone(t, tone, 16000, 1, 440, 0.2, 0.5)
	badCfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badCfg, []byte("playback:\n  fade_ms: 999\n"), 0o644)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"no file", nil, []string{"say"}, 2, "robot-agent: say: want one WAV file"},
		{"missing file", nil, []string{"say", filepath.Join(dir, "nope.wav")}, 2, "nope.wav: no such file"},
		{"not a WAV", nil, []string{"play", notWAV}, 2, "notes.txt: not a playable WAV file: wav: not a RIFF file"},
		{"no audio in it", nil, []string{"say", "--sim", empty}, 2, "empty.wav: the file holds no audio"},
		{"bad config", nil, []string{"say", "--config", badCfg, tone}, 2, "playback.fade_ms"},
		// No such output device: a PortAudio build finds none of that name,
		// a build without PortAudio has no real devices at all.
		{"no device", map[string]string{"ROBOT_AGENT_AUDIO_OUTPUT": "no-such-speaker-7f3a"}, []string{"say", "--config", "", tone}, 3, "robot-agent: say: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errs := runCLI(tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) || strings.Count(errs, "\n") != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and one line containing %q", code, out, errs, tc.code, tc.msg)
			}
		})
	}
}

// say --sim plays a 22.05 kHz stereo file through the player into the
// simulated speaker: same length and tone at 24 kHz mono.
func TestSayPlaysThroughTheSimulatedSpeaker(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out", "played.wav")
	writeTone(t, in, 22050, 2, 500, 0.6, 0.4)
	code, stdout, errs := runCLI("say", "--config", "", "--sim", "--speaker-wav", out, in)
	if code != 0 || !strings.Contains(stdout, "played "+in+" (0.60 s, 22050 Hz 2 ch → 24000 Hz mono)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	a, err := wav.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rms, freq := toneOf(a.Samples, a.SampleRate)
	if a.SampleRate != 24000 || math.Abs(rms-0.4/math.Sqrt2) > 0.02 || math.Abs(freq-500) > 10 {
		t.Fatalf("speaker got %d Hz, RMS %.3f (want %.3f), tone %.1f Hz (want 500)", a.SampleRate, rms, 0.4/math.Sqrt2, freq)
	}
	if secs := float64(a.Frames()) / 24000; secs < 0.6 || secs > 0.8 {
		t.Fatalf("speaker played %.2f s, want about 0.6 s", secs)
	}
}
