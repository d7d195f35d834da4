package capture

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/vad"
)

func TestConfigValidateDetector(t *testing.T) {
	if d := (Config{}).WithDefaults().VAD.Detector; d != DetectorAuto {
		t.Errorf("default detector %q", d)
	}
	if err := (Config{Mode: ModeVAD, FrameMS: 60}).Validate(); err != nil {
		t.Errorf("default detector with 60 ms frames: %v", err)
	}
	if err := (Config{Mode: ModeVAD, FrameMS: 40, VAD: VADConfig{Detector: vad.KindVoiced}}).Validate(); err != nil {
		t.Errorf("voiced with 40 ms frames: %v", err)
	}
	err := Config{VAD: VADConfig{Detector: "neural"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), `vad.detector: "neural": want auto or one of [energy webrtc speex spectral voiced]`) {
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
	if d := r.pump.Detector(); d != vad.KindSpectral {
		t.Fatalf("auto detector without an onset guard: %q, want spectral", d)
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

type fixedGuard bool

func (g fixedGuard) EchoDominated() bool { return bool(g) }

// auto is energy while an echo canceller's onset guard is installed (full
// duplex: the spectral detector hears residual echo), spectral otherwise;
// an explicit detector is not switched.
func TestAutoDetectorFollowsTheOnsetGuard(t *testing.T) {
	p := newBarePump(t, Config{Mode: ModeVAD})
	if d := p.Detector(); d != vad.KindSpectral {
		t.Errorf("auto, no guard: %q", d)
	}
	p.SetOnsetGuard(fixedGuard(false))
	if d := p.Detector(); d != vad.KindEnergy {
		t.Errorf("auto with a guard: %q", d)
	}
	i := 0
	if a := testing.AllocsPerRun(100, func() { feed(p, i); i++ }); a != 0 || p.utterances.Value() == 0 {
		t.Errorf("auto with a guard: %v allocs per frame, %d utterances", a, p.utterances.Value())
	}
	p.SetOnsetGuard(nil)
	if d := p.Detector(); d != vad.KindSpectral {
		t.Errorf("auto, guard removed: %q", d)
	}
	q := newBarePump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: vad.KindSpectral}})
	q.SetOnsetGuard(fixedGuard(false))
	if d := q.Detector(); d != vad.KindSpectral {
		t.Errorf("explicit spectral with a guard: %q", d)
	}
	if err := (Config{Mode: ModeVAD, FrameMS: 40}).Validate(); err != nil {
		t.Errorf("auto at 40 ms: %v", err)
	}
}

// detector_mode reaches an explicit spectral detector (its decision
// hangover, 0..200 ms) but not auto, which uses spectral's defaults.
func TestDetectorModeSpectral(t *testing.T) {
	clk := clock.NewFake()
	mic, err := sim.NewMic(sim.MicConfig{}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer mic.Close()
	for _, tc := range []struct {
		det  string
		mode int
		ok   bool
	}{{vad.KindSpectral, 50, true}, {vad.KindSpectral, 500, false}, {DetectorAuto, 500, true}} {
		p, err := NewPump(Config{Mode: ModeVAD, VAD: VADConfig{Detector: tc.det, DetectorMode: tc.mode}}, mic, &collector{}, clk, nil, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s mode %d: error %v, want ok %v", tc.det, tc.mode, err, tc.ok)
		}
		if err == nil {
			p.Close()
		}
	}
}

// bgDetector is a detector whose speech-like background guard is on for
// frames [from, to) of the frames it judges.
type bgDetector struct {
	n, from, to int
}

func (d *bgDetector) Kind() string { return "bg" }
func (d *bgDetector) Close() error { return nil }
func (d *bgDetector) Speech(f []int16, _ bool) bool {
	d.n++
	return false
}
func (d *bgDetector) BackgroundGuardOn() bool { return d.n > d.from && d.n <= d.to }

// The pump counts the frames judged with a speech-like background, holds
// the gauge at 1 while it lasts and logs both edges once.
func TestPumpReportsSpeechlikeBackground(t *testing.T) {
	var logs strings.Builder
	reg := metrics.NewRegistry()
	p, err := NewPump(Config{Mode: ModeVAD, VAD: VADConfig{Detector: vad.KindSpectral}}, &failing{}, &collector{}, clock.NewFake(), reg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.detBG == nil {
		t.Fatal("the spectral detector does not report its background guard")
	}
	d := &bgDetector{from: 100, to: 250}
	p.det, p.detBG = d, d
	for i := range 400 {
		feed(p, i)
		if i == 200 && reg.Value(MetricBackground) != 1 {
			t.Errorf("gauge %d during the background, want 1", reg.Value(MetricBackground))
		}
	}
	if got := reg.Value(MetricBackgroundFrames); got != 150 {
		t.Errorf("%d frames counted with the background, want 150", got)
	}
	if got := reg.Value(MetricBackground); got != 0 {
		t.Errorf("gauge %d after the background, want 0", got)
	}
	if on, off := strings.Count(logs.String(), "speech-like background (babble"), strings.Count(logs.String(), "speech-like background gone"); on != 1 || off != 1 {
		t.Errorf("logged %d starts and %d ends, want 1 and 1:\n%s", on, off, logs.String())
	}
	if !strings.Contains(logs.String(), "background_db=10") {
		t.Errorf("the log does not give the margin in effect:\n%s", logs.String())
	}
}
