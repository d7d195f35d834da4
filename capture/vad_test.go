package capture

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/vad"
)

func TestConfigValidateDetector(t *testing.T) {
	if d := (Config{}).WithDefaults().VAD.Detector; d != vad.KindSpectral {
		t.Errorf("default detector %q", d)
	}
	if err := (Config{Mode: ModeVAD, FrameMS: 60}).Validate(); err != nil {
		t.Errorf("default detector with 60 ms frames: %v", err)
	}
	err := Config{VAD: VADConfig{Detector: "neural"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), `vad.detector: "neural": want one of [energy webrtc speex spectral]`) {
		t.Errorf("unknown detector: %v", err)
	}
	err = Config{FrameMS: 40, VAD: VADConfig{Detector: vad.KindWebRTC}}.Validate()
	want := `vad.detector: "webrtc": takes frames of 10, 20 or 30 ms, not frame_ms 40 (use energy or spectral, or frame_ms 20)`
	if !slices.Contains(vad.Available(), vad.KindWebRTC) {
		want = `vad.detector: "webrtc": not built into this binary (needs cgo and its build tag, see package vad; built in: energy, spectral`
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("webrtc at 40 ms: %v, want %q", err, want)
	}
}

// The default detector on the simulator's speech in a -45 dBFS room (the
// sim's voice is about 20 dB above it): both utterances found, each
// starting within 60 ms of pre-roll + speech onset, none elsewhere.
func TestVADDefaultDetector(t *testing.T) {
	r := newRig(t, Config{Mode: ModeVAD}, sim.MicConfig{Script: speechScript, Seed: 5, NoiseDBFS: -45}, 280)
	if r.pump.Config().VAD.Detector != vad.KindSpectral {
		t.Fatalf("detector %q", r.pump.Config().VAD.Detector)
	}
	r.run(t)
	checkSeq(t, r.col.frames)
	us := r.col.utterances()
	if len(us) != 2 {
		t.Fatalf("%d utterances, want 2", len(us))
	}
	for i, u := range us {
		checkUtterance(t, u)
		start := speechScript.SpeechStarts()[i] - DefaultPreRollMS*time.Millisecond
		if u[0].TS < start || u[0].TS > start+60*time.Millisecond {
			t.Errorf("utterance %d starts at %v, want %v..+60ms", i+1, u[0].TS, start)
		}
	}
}

func TestProcessNoAllocsEveryDetector(t *testing.T) {
	for _, k := range vad.Available() {
		p := newBarePump(t, Config{Mode: ModeVAD, VAD: VADConfig{HangoverMS: 200, Detector: k}})
		i := 0
		if a := testing.AllocsPerRun(400, func() { feed(p, i); i++ }); a != 0 {
			t.Errorf("%s: %v allocs per frame, want 0", k, a)
		}
		if p.utterances.Value() == 0 && k != vad.KindSpeex { // speex's VAD: see vad.TestSpeexVADIsUnusable
			t.Errorf("%s: no utterance went through the measured path", k)
		}
		p.Close()
	}
}
