package capture

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/vad"
)

const frame20 = 20 * time.Millisecond

type rec struct {
	Utt, Seq uint32
	Flag     protocol.Flag
	TS       time.Duration
	Samples  []int16
}

// collector is a FrameSink recording delivered frames; drop decides which
// sequence numbers it refuses.
type collector struct {
	frames []rec
	drop   func(seq uint32) bool
}

func (c *collector) SendMic(f *Frame) bool {
	if c.drop != nil && c.drop(f.Seq) {
		return false
	}
	c.frames = append(c.frames, rec{f.Utterance, f.Seq, f.Flag, f.TS, slices.Clone(f.Samples)})
	return true
}

// utterances groups delivered frames by utterance id, in order.
func (c *collector) utterances() [][]rec {
	var out [][]rec
	for _, f := range c.frames {
		if len(out) == 0 || out[len(out)-1][0].Utt != f.Utt {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], f)
	}
	return out
}

// scripted wraps a source: before read i it calls before(i), and it
// cancels the run after limit reads.
type scripted struct {
	hw.AudioSource
	n      int
	limit  int
	cancel context.CancelFunc
	before func(i int)
}

func (s *scripted) Read(dst []int16) (int, error) {
	if s.before != nil {
		s.before(s.n)
	}
	n, err := s.AudioSource.Read(dst)
	s.n++
	if s.n == s.limit {
		s.cancel()
	}
	return n, err
}

type rig struct {
	clk  *clock.Fake
	mic  *sim.Mic
	src  *scripted
	col  *collector
	reg  *metrics.Registry
	pump *Pump
	ctx  context.Context
}

func newRig(t *testing.T, cfg Config, mc sim.MicConfig, reads int) *rig {
	t.Helper()
	clk := clock.NewFake()
	clk.SetAutoAdvance(true)
	mc.Record = true
	mic, err := sim.NewMic(mc, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mic.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &rig{clk: clk, mic: mic, col: &collector{}, reg: metrics.NewRegistry(), ctx: ctx}
	r.src = &scripted{AudioSource: mic, limit: reads, cancel: cancel}
	r.pump, err = NewPump(cfg, r.src, r.col, clk, r.reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) run(t *testing.T) error {
	t.Helper()
	return r.pump.Run(r.ctx)
}

// sentAt returns the mic samples captured from ts on (the mic starts at 0).
func (r *rig) sentAt(t *testing.T, ts time.Duration, n int) []int16 {
	t.Helper()
	all := r.mic.Sent()
	i := int(ts * 16000 / time.Second)
	if i < 0 || i+n > len(all) {
		t.Fatalf("samples [%d:%d] out of the %d the mic produced", i, i+n, len(all))
	}
	return all[i : i+n]
}

func concat(frames []rec) []int16 {
	var out []int16
	for _, f := range frames {
		out = append(out, f.Samples...)
	}
	return out
}

// checkUtterance checks flags, ids and 20 ms spacing of one utterance.
func checkUtterance(t *testing.T, u []rec) {
	t.Helper()
	for i, f := range u {
		want := protocol.FlagContinue
		switch i {
		case 0:
			want = protocol.FlagStart
		case len(u) - 1:
			want = protocol.FlagEnd
		}
		if f.Flag != want {
			t.Errorf("utterance %d frame %d (seq %d) flag %d, want %d", f.Utt, i, f.Seq, f.Flag, want)
		}
		if i > 0 && f.TS-u[i-1].TS != frame20 {
			t.Errorf("utterance %d frame %d at %v, previous at %v: not 20 ms apart", f.Utt, i, f.TS, u[i-1].TS)
		}
	}
}

func checkSeq(t *testing.T, frames []rec) {
	t.Helper()
	for i, f := range frames {
		if f.Seq != uint32(i) {
			t.Fatalf("frame %d has seq %d", i, f.Seq)
		}
		if i > 0 && f.TS < frames[i-1].TS {
			t.Fatalf("frame %d TS %v before previous %v", i, f.TS, frames[i-1].TS)
		}
	}
}

var speechScript = &sim.SpeechScript{Utterances: []sim.Utterance{
	{Silence: time.Second},
	{Speech: time.Second, Silence: 1500 * time.Millisecond},
	{Speech: 600 * time.Millisecond, Silence: 1500 * time.Millisecond},
}}

func TestContinuous(t *testing.T) {
	r := newRig(t, Config{}, sim.MicConfig{Script: speechScript, Seed: 3}, 50)
	if err := r.run(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	f := r.col.frames
	if len(f) != 51 {
		t.Fatalf("%d frames, want 50 + an empty end frame", len(f))
	}
	checkSeq(t, f)
	checkUtterance(t, f)
	for i, fr := range f {
		if fr.Utt != 1 {
			t.Errorf("frame %d utterance %d, want 1", i, fr.Utt)
		}
		if fr.TS != time.Duration(i)*frame20 {
			t.Errorf("frame %d TS %v, want %v", i, fr.TS, time.Duration(i)*frame20)
		}
	}
	if last := f[50]; len(last.Samples) != 0 || last.TS != time.Second {
		t.Errorf("end frame has %d samples at %v, want empty at 1s", len(last.Samples), last.TS)
	}
	if got, want := concat(f), r.mic.Sent(); !slices.Equal(got, want) || len(got) != 50*320 {
		t.Errorf("frames carry %d samples that differ from the %d the mic produced", len(got), len(want))
	}
	for name, want := range map[string]int64{MetricFrames: 51, MetricUtterances: 1, MetricDropped: 0, MetricReadErrors: 0} {
		if got := r.reg.Value(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}

	// A second Run is a new utterance; seq carries on.
	ctx, cancel := context.WithCancel(context.Background())
	r.src.n, r.src.limit, r.src.cancel = 0, 3, cancel
	if err := r.pump.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Run = %v", err)
	}
	more := r.col.frames[51:]
	if len(more) != 4 || more[0].Utt != 2 || more[0].Seq != 51 || more[0].Flag != protocol.FlagStart || more[3].Flag != protocol.FlagEnd {
		t.Errorf("second run frames %+v", more)
	}
}

func TestContinuousFrameSizes(t *testing.T) {
	for _, ms := range []int{10, 20, 40, 60} {
		r := newRig(t, Config{FrameMS: ms}, sim.MicConfig{Script: speechScript}, 20)
		r.run(t)
		f := r.col.frames
		d := time.Duration(ms) * time.Millisecond
		for i, fr := range f[:20] {
			if len(fr.Samples) != 16*ms || fr.TS != time.Duration(i)*d {
				t.Errorf("%d ms: frame %d has %d samples at %v", ms, i, len(fr.Samples), fr.TS)
			}
		}
		if !slices.Equal(concat(f), r.mic.Sent()) {
			t.Errorf("%d ms: samples differ from the mic's", ms)
		}
	}
}

func TestContinuousDrops(t *testing.T) {
	r := newRig(t, Config{}, sim.MicConfig{Script: speechScript}, 10)
	r.col.drop = func(seq uint32) bool { return seq == 0 || seq == 5 }
	r.run(t)
	f := r.col.frames
	if len(f) != 9 {
		t.Fatalf("%d frames delivered, want 11 - 2 dropped", len(f))
	}
	if f[0].Seq != 1 || f[0].Flag != protocol.FlagStart {
		t.Errorf("first delivered frame seq %d flag %d, want seq 1 carrying FlagStart", f[0].Seq, f[0].Flag)
	}
	if f[3].Seq != 4 || f[4].Seq != 6 {
		t.Errorf("seq around the drop: %d, %d; want a gap 4 → 6", f[3].Seq, f[4].Seq)
	}
	if r.reg.Value(MetricDropped) != 2 || r.reg.Value(MetricFrames) != 11 {
		t.Errorf("dropped %d frames %d, want 2 and 11", r.reg.Value(MetricDropped), r.reg.Value(MetricFrames))
	}
}

// TestVAD checks the pump's utterance timing exactly, with the energy
// detector (no hangover of its own; TestVADDefaultDetector runs the
// default).
func TestVAD(t *testing.T) {
	cfg := Config{Mode: ModeVAD, VAD: VADConfig{Detector: vad.KindEnergy}}
	r := newRig(t, cfg, sim.MicConfig{Script: speechScript, Seed: 11}, 280)
	if err := r.run(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	checkSeq(t, r.col.frames)
	us := r.col.utterances()
	if len(us) != 2 {
		t.Fatalf("%d utterances, want 2", len(us))
	}
	speechStarts := speechScript.SpeechStarts()
	speechEnds := []time.Duration{2 * time.Second, 4100 * time.Millisecond}
	for i, u := range us {
		checkUtterance(t, u)
		if u[0].Utt != uint32(i+1) {
			t.Errorf("utterance %d has id %d", i, u[0].Utt)
		}
		// Pre-roll: the first frame starts PreRollMS before the speech.
		if want := speechStarts[i] - DefaultPreRollMS*time.Millisecond; u[0].TS != want {
			t.Errorf("utterance %d starts at %v, want %v (speech at %v minus pre-roll)", i+1, u[0].TS, want, speechStarts[i])
		}
		got := concat(u)
		if want := r.sentAt(t, u[0].TS, len(got)); !slices.Equal(got, want) {
			t.Errorf("utterance %d samples differ from the mic's from %v on", i+1, u[0].TS)
		}
		// Hangover: the last frame ends HangoverMS after the speech (±1 frame).
		end := u[len(u)-1].TS + frame20
		if want := speechEnds[i] + DefaultHangoverMS*time.Millisecond; end < want-frame20 || end > want+frame20 {
			t.Errorf("utterance %d ends at %v, want %v±20ms", i+1, end, want)
		}
	}
	if got := r.reg.Value(MetricUtterances); got != 2 {
		t.Errorf("%s = %d", MetricUtterances, got)
	}
	if got := r.reg.Value(MetricFrames); got != int64(len(r.col.frames)) {
		t.Errorf("%s = %d, want %d", MetricFrames, got, len(r.col.frames))
	}
}

func TestVADAdaptsToNoisyRoom(t *testing.T) {
	// At -45 dBFS background a fixed threshold from the -70 dBFS minimum
	// floor would call everything speech.
	r := newRig(t, Config{Mode: ModeVAD}, sim.MicConfig{Script: speechScript, Seed: 5, NoiseDBFS: -45}, 280)
	r.run(t)
	us := r.col.utterances()
	if len(us) != 2 {
		t.Fatalf("%d utterances in a -45 dBFS room, want 2", len(us))
	}
	for i, u := range us {
		checkUtterance(t, u)
		start := speechScript.SpeechStarts()[i] - DefaultPreRollMS*time.Millisecond
		if u[0].TS < start || u[0].TS > start+100*time.Millisecond {
			t.Errorf("utterance %d starts at %v, want about %v", i+1, u[0].TS, start)
		}
	}
}

func TestVADMaxUtterance(t *testing.T) {
	script := &sim.SpeechScript{Utterances: []sim.Utterance{{Silence: time.Second}, {Speech: 3 * time.Second, Silence: time.Second}}}
	r := newRig(t, Config{Mode: ModeVAD, VAD: VADConfig{MaxUtteranceMS: 1000}}, sim.MicConfig{Script: script, Seed: 2}, 250)
	r.run(t)
	checkSeq(t, r.col.frames)
	us := r.col.utterances()
	if len(us) < 3 {
		t.Fatalf("%d utterances from 3 s of speech with a 1 s limit, want at least 3", len(us))
	}
	if len(us[0]) != 50 {
		t.Errorf("first utterance has %d frames, want 50 (1 s)", len(us[0]))
	}
	for i, u := range us {
		checkUtterance(t, u)
		if len(u) > 50 {
			t.Errorf("utterance %d has %d frames, over the 1 s limit", i+1, len(u))
		}
	}
	// Speech going on restarts at once, without repeating or losing audio.
	if got, want := us[1][0].TS, us[0][len(us[0])-1].TS+frame20; got != want {
		t.Errorf("second utterance starts at %v, want %v (right after the forced end)", got, want)
	}
	got := concat(r.col.frames)
	if want := r.sentAt(t, us[0][0].TS, len(got)); !slices.Equal(got, want) {
		t.Error("forced-split utterances are not the contiguous mic audio")
	}
}

func TestVADGate(t *testing.T) {
	script := &sim.SpeechScript{Utterances: []sim.Utterance{
		{Silence: time.Second}, {Speech: time.Second, Silence: time.Second}, {Speech: 2 * time.Second, Silence: time.Second},
	}}
	r := newRig(t, Config{Mode: ModeVAD}, sim.MicConfig{Script: script, Seed: 4}, 300)
	var gate atomic.Bool
	r.pump.SetGate(GateFunc(gate.Load))
	r.src.before = func(i int) {
		switch i {
		case 0: // robot speaks over the first utterance
			gate.Store(true)
		case 150: // robot done at 3.0 s, when the second utterance starts
			gate.Store(false)
		case 200: // robot speaks again at 4.0 s, mid-utterance
			gate.Store(true)
		case 260:
			gate.Store(false)
		}
	}
	r.run(t)
	us := r.col.utterances()
	if len(us) != 1 {
		for _, u := range us {
			t.Logf("utterance %v..%v", u[0].TS, u[len(u)-1].TS)
		}
		t.Fatalf("%d utterances, want 1 (the first is gated)", len(us))
	}
	u := us[0]
	checkUtterance(t, u)
	if u[0].TS != 3*time.Second {
		t.Errorf("starts at %v, want 3s (pre-roll discarded while gated)", u[0].TS)
	}
	if last := u[len(u)-1]; last.TS != 4*time.Second || last.Flag != protocol.FlagEnd {
		t.Errorf("ends with flag %d at %v, want FlagEnd at 4s when the gate closed", last.Flag, last.TS)
	}
	r.pump.SetGate(nil) // removing the gate is allowed
}

// failing is a source that fails after n reads.
type failing struct {
	n   int
	err error
}

func (f *failing) Format() hw.AudioFormat { return hw.MicFormat }
func (f *failing) Close() error           { return nil }
func (f *failing) Read(dst []int16) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	f.n--
	return len(dst), nil
}

func TestSourceFailure(t *testing.T) {
	for _, tt := range []struct {
		err        error
		readErrors int64
	}{{hw.ErrDeviceLost, 1}, {hw.ErrClosed, 0}} {
		clk := clock.NewFake()
		col := &collector{}
		reg := metrics.NewRegistry()
		p, err := NewPump(Config{}, &failing{n: 3, err: tt.err}, col, clk, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Run(context.Background())
		if !errors.Is(err, tt.err) || !strings.HasPrefix(err.Error(), "capture: reading mic: ") {
			t.Errorf("Run = %v, want a capture error wrapping %v", err, tt.err)
		}
		if len(col.frames) != 4 || col.frames[3].Flag != protocol.FlagEnd || len(col.frames[3].Samples) != 0 {
			t.Errorf("%v: frames %d, want 3 + an empty end frame", tt.err, len(col.frames))
		}
		for i, f := range col.frames[:3] {
			// The source returns at once on a clock stuck at 0: read time
			// minus frame duration would be negative, TS is clamped.
			if f.TS != 0 {
				t.Errorf("frame %d TS %v, want 0 (never before the previous frame or 0)", i, f.TS)
			}
		}
		if end := col.frames[3].TS; end != frame20 {
			t.Errorf("end frame TS %v, want 20ms (end of the last frame)", end)
		}
		if got := reg.Value(MetricReadErrors); got != tt.readErrors {
			t.Errorf("%v: read errors %d, want %d", tt.err, got, tt.readErrors)
		}
	}
}

func TestRunTwice(t *testing.T) {
	clk := clock.NewFake() // not advancing: Run parks in Read
	mic, _ := sim.NewMic(sim.MicConfig{}, clk)
	p, err := NewPump(Config{}, mic, &collector{}, clk, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	for clk.Sleepers() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := p.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Errorf("concurrent Run = %v, want ErrRunning", err)
	}
	mic.Close()
	if err := <-done; !errors.Is(err, hw.ErrClosed) {
		t.Errorf("Run after the owner closed the mic = %v, want hw.ErrClosed", err)
	}
}

type fmtSource struct{ failing }

func (fmtSource) Format() hw.AudioFormat { return hw.AudioFormat{SampleRate: 48000, Channels: 2} }

func TestNewPumpErrors(t *testing.T) {
	clk := clock.NewFake()
	_, err := NewPump(Config{}, &fmtSource{}, &collector{}, clk, nil, nil)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "48000 Hz x 2 ch") {
		t.Errorf("48k stereo source: %v", err)
	}
	if _, err := NewPump(Config{Mode: "foo"}, &failing{}, &collector{}, clk, nil, nil); err == nil {
		t.Error("bad config accepted")
	}
	if _, err := NewPump(Config{}, &failing{}, nil, clk, nil, nil); err == nil {
		t.Error("nil sink accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		msg  string // "" means valid
	}{
		{"zero is defaults", Config{}, ""},
		{"vad 60 ms", Config{FrameMS: 60, Mode: ModeVAD}, ""},
		{"frame 30", Config{FrameMS: 30}, "frame_ms: 30: want 10, 20, 40 or 60"},
		{"frame negative", Config{FrameMS: -20}, "frame_ms: -20"},
		{"mode", Config{Mode: "foo"}, `mode: "foo": want continuous or vad`},
		{"start_db", Config{VAD: VADConfig{StartDB: 70}}, "vad.start_db: 70: out of range 0..60"},
		{"stop above start", Config{VAD: VADConfig{StartDB: 10, StopDB: 11}}, "vad.stop_db: 11: out of range 0..start_db (10)"},
		{"min floor", Config{VAD: VADConfig{MinFloorDBFS: -10}}, "vad.min_floor_dbfs: -10: out of range -100..-20"},
		{"floor rise", Config{VAD: VADConfig{FloorRiseDBPerS: -1}}, "vad.floor_rise_db_per_s: -1"},
		{"background off", Config{VAD: VADConfig{BackgroundDB: -1}}, ""},
		{"background", Config{VAD: VADConfig{BackgroundDB: 41}}, "vad.background_db: 41: out of range: at most 40"},
		{"transient", Config{VAD: VADConfig{TransientDecayDB: 20.5}}, "vad.transient_decay_db: 20.5: out of range: at most 20"},
		{"preroll", Config{VAD: VADConfig{PreRollMS: -5}}, "vad.preroll_ms: -5: out of range 0..2000"},
		{"hangover", Config{VAD: VADConfig{HangoverMS: 9000}}, "vad.hangover_ms: 9000: out of range 0..5000"},
		{"min speech", Config{VAD: VADConfig{MinSpeechMS: 1001}}, "vad.min_speech_ms: 1001"},
		{"gradual start off", Config{VAD: VADConfig{GradualStartMS: -1}}, ""},
		{"gradual start", Config{VAD: VADConfig{GradualStartMS: 1001}}, "vad.gradual_start_ms: 1001: out of range: at most 1000"},
		{"max utterance huge", Config{VAD: VADConfig{MaxUtteranceMS: 700000}}, "vad.max_utterance_ms: 700000: out of range"},
		{"max utterance short", Config{VAD: VADConfig{MaxUtteranceMS: 200}}, "vad.max_utterance_ms: 200: shorter than preroll_ms + min_speech_ms + frame_ms (380)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.msg == "" {
				if err != nil {
					t.Errorf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Validate = %v, want an error containing %q", err, tt.msg)
			}
		})
	}
	err := Config{FrameMS: 7, Mode: "x"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "frame_ms: 7") || !strings.Contains(err.Error(), `mode: "x"`) {
		t.Errorf("Validate reports only %v; want every problem", err)
	}
	d := Config{}.WithDefaults()
	if d.FrameMS != 20 || d.Mode != ModeContinuous || d.VAD.PreRollMS != 300 || d.VAD.HangoverMS != 600 {
		t.Errorf("defaults %+v", d)
	}
}

// tone fills a 20 ms frame with a sine at the given dBFS (or zeros).
func tone(dst []int16, db float64) {
	if db <= -120 {
		clear(dst)
		return
	}
	amp := 32768 * math.Sqrt2 * math.Pow(10, db/20)
	for i := range dst {
		dst[i] = int16(amp * math.Sin(2*math.Pi*200*float64(i)/16000))
	}
}

func newBarePump(tb testing.TB, cfg Config) *Pump {
	tb.Helper()
	p, err := NewPump(cfg, &failing{}, &collector{drop: func(uint32) bool { return true }}, clock.NewFake(), nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

var loudFrame, quietFrame = func() ([]int16, []int16) {
	l, q := make([]int16, 320), make([]int16, 320)
	tone(l, -20)
	tone(q, -80) // quiet, but not digital silence (Pump.lost)
	return l, q
}()

// feed runs one frame through process: speech for 15 frames out of 40.
func feed(p *Pump, i int) {
	cur := &p.ring[p.head]
	if i%40 < 15 {
		copy(cur.samples, loudFrame)
	} else {
		copy(cur.samples, quietFrame)
	}
	cur.ts = time.Duration(i) * frame20
	p.lastTS = cur.ts
	p.process(cur)
}

func TestProcessNoAllocs(t *testing.T) {
	for _, mode := range []string{ModeContinuous, ModeVAD} {
		p := newBarePump(t, Config{Mode: mode, VAD: VADConfig{HangoverMS: 200}})
		i := 0
		allocs := testing.AllocsPerRun(400, func() { feed(p, i); i++ })
		if allocs != 0 {
			t.Errorf("%s: %v allocs per frame, want 0", mode, allocs)
		}
		if p.utterances.Value() == 0 {
			t.Errorf("%s: no utterance went through the measured path", mode)
		}
		if mode == ModeVAD && p.utterances.Value() < 5 {
			t.Errorf("vad: %d utterances over 400 frames, want about 10", p.utterances.Value())
		}
	}
}

// BenchmarkProcessVAD: one frame through the VAD path, per detector built
// in (the default, spectral, and the energy fallback at least).
func BenchmarkProcessVAD(b *testing.B) {
	kinds := append(vad.Available(), vad.KindSpectral+"+fast")
	for _, k := range kinds {
		b.Run(k, func(b *testing.B) {
			kind, fast := strings.CutSuffix(k, "+fast")
			p := newBarePump(b, Config{Mode: ModeVAD, VAD: VADConfig{Detector: kind, FastOnset: fast}})
			defer p.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				feed(p, i)
				i++
			}
		})
	}
}
