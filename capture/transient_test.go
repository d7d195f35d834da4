package capture

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/vad"
)

// pcmSource plays s as a mic, advancing clk by what each Read returns.
type pcmSource struct {
	clk *clock.Fake
	s   []int16
	pos int
}

func (s *pcmSource) Format() hw.AudioFormat { return hw.MicFormat }
func (s *pcmSource) Close() error           { return nil }
func (s *pcmSource) Read(dst []int16) (int, error) {
	if s.pos+len(dst) > len(s.s) {
		return 0, hw.ErrClosed
	}
	copy(dst, s.s[s.pos:])
	s.pos += len(dst)
	s.clk.Advance(time.Duration(len(dst)) * time.Second / 16000)
	return len(dst), nil
}

// knockRoom renders a -50 dBFS noisy room with knocks (broadband, low thuds
// and a ringing clunk, decaying with 10..50 ms time constants, peaks 25 to
// 30 dB above the room) every 0.8 s from 0.6 s, then from voiceAt a voiced
// talker rising into her first syllable over 30 ms and talking for a
// second.
func knockRoom(voiceAt float64) (s []int16, knocks int) {
	const rate = 16000
	rng := rand.New(rand.NewPCG(11, 12))
	n := int((voiceAt + 1.8) * rate)
	s = make([]int16, n)
	bg := pcm.DBFSToRMS(-50)
	type knock struct {
		at, tau, amp, hz float64
	}
	var ks []knock
	for at, i := 0.6, 0; at+0.4 < voiceAt; at, i = at+0.8, i+1 {
		ks = append(ks, knock{at: at + 0.0037*float64(i), tau: []float64{0.01, 0.03, 0.05, 0.02}[i%4],
			amp: pcm.DBFSToRMS([]float64{-20, -25, -22, -24}[i%4]), hz: []float64{0, 120, 0, 900}[i%4]})
	}
	lp := 0.0
	for i := range s {
		t := float64(i) / rate
		v := bg * rng.NormFloat64()
		for _, k := range ks {
			if d := t - k.at; d >= 0 && d < 0.5 {
				e := k.amp * math.Exp(-d/k.tau)
				if k.hz == 0 {
					v += e * rng.NormFloat64()
				} else {
					v += e * math.Sqrt2 * math.Sin(2*math.Pi*k.hz*d)
				}
			}
		}
		if d := t - voiceAt; d >= 0 && d < 1 {
			f0 := 140 + 20*math.Sin(2*math.Pi*0.7*d)
			lp += 2 * math.Pi * f0 / rate
			var h float64
			for k := 1; k <= 10; k++ {
				h += math.Sin(float64(k)*lp) / float64(k)
			}
			env := math.Min(d/0.03, 1) * (0.6 + 0.4*math.Sin(math.Pi*4*d))
			v += pcm.DBFSToRMS(-26) * env * h
		}
		s[i] = int16(max(min(v, 32767), -32768))
	}
	return s, len(ks)
}

// runPump runs cfg's pump over s and returns the utterances' first frame
// timestamps and the registry's transient count.
func runPump(t *testing.T, cfg Config, s []int16) (starts []time.Duration, held int64) {
	t.Helper()
	starts, reg := runPumpRegistry(t, cfg, s)
	return starts, reg.Value(MetricTransients)
}

// runPumpRegistry is runPump with the pump's metrics.
func runPumpRegistry(t *testing.T, cfg Config, s []int16) ([]time.Duration, *metrics.Registry) {
	t.Helper()
	clk := clock.NewFake()
	return runPumpOn(t, cfg, clk, &pcmSource{clk: clk, s: s})
}

// runPumpOn is runPumpRegistry over src, whose clock is clk.
func runPumpOn(t *testing.T, cfg Config, clk *clock.Fake, src hw.AudioSource) ([]time.Duration, *metrics.Registry) {
	t.Helper()
	var starts []time.Duration
	col := &collector{}
	reg := metrics.NewRegistry()
	p, err := NewPump(cfg, src, col, clk, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); !errors.Is(err, hw.ErrClosed) {
		t.Fatalf("Run: %v", err)
	}
	for _, u := range col.utterances() {
		starts = append(starts, u[0].TS)
	}
	return starts, reg
}

// In a room of knocks, the pump with its transient guard starts no
// utterance on them (every detector built in), counts each run it held,
// and starts the talker's utterance at the same frame as without the
// guard. Without the guard the same knocks start utterances, so the room
// does test the guard.
func TestVADTransientGuardIgnoresKnocks(t *testing.T) {
	const voiceAt = 4.0
	s, knocks := knockRoom(voiceAt)
	for _, det := range []string{vad.KindEnergy, DetectorAuto} {
		t.Run(det, func(t *testing.T) {
			off, _ := runPump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det, TransientDecayDB: -1}}, s)
			on, held := runPump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, s)
			if len(off) < 3 {
				t.Fatalf("without the guard %d utterances (%v) in a room of %d knocks and one talker: the room does not test the guard", len(off), off, knocks)
			}
			if len(on) != 1 {
				t.Fatalf("with the guard %d utterances at %v, want 1 (the talker's); without it %v", len(on), on, off)
			}
			want := time.Duration(voiceAt*float64(time.Second)) - DefaultPreRollMS*time.Millisecond
			if on[0] < want-20*time.Millisecond || on[0] > want+80*time.Millisecond {
				t.Errorf("the talker's utterance starts at %v, want %v (onset - pre-roll) +80ms", on[0], want)
			}
			// Not later than without the guard (earlier when a knock's
			// utterance, ending just before, cut the pre-roll short).
			if on[0] > off[len(off)-1] {
				t.Errorf("the talker's utterance starts at %v with the guard, %v without", on[0], off[len(off)-1])
			}
			if held != int64(len(off)-1) {
				t.Errorf("%s = %d, want %d (the knocks that start an utterance without the guard)", MetricTransients, held, len(off)-1)
			}
		})
	}
}

// exCuse renders "Ex-cuse me" as the transient guard sees it: in a -50
// dBFS room from exAt, a voiced syllable that starts abruptly, peaks and
// falls (a short vowel closed by a stop: it looks like a knock), then 270
// ms later (a weak syllable the detector misses, a pause) the voice
// rising over 30 ms for 0.8 s: more than the pre-roll after the first.
func exCuse(exAt float64) []int16 {
	return talker(21, exAt+1.8, 120, func(t float64) float64 {
		switch d := t - exAt; {
		case d >= 0 && d < 0.03:
			return 1
		case d >= 0.03 && d < 0.06:
			return math.Exp(-(d - 0.03) / 0.012)
		case d >= 0.33 && d < 1.13:
			return math.Min((d-0.33)/0.03, 1)
		}
		return 0
	}, nil)
}

// talker renders seconds of a -50 dBFS room (noise from seed) with a
// voiced talker at hz and -24 dBFS times env(t), plus extra(t) if not nil.
func talker(seed uint64, seconds, hz float64, env func(t float64) float64, extra func(t float64, rng *rand.Rand) float64) []int16 {
	const rate = 16000
	rng := rand.New(rand.NewPCG(seed, seed+1))
	s := make([]int16, int(seconds*rate))
	bg := pcm.DBFSToRMS(-50)
	ph := 0.0
	for i := range s {
		t := float64(i) / rate
		v := bg * rng.NormFloat64()
		if extra != nil {
			v += extra(t, rng)
		}
		if e := env(t); e > 0 {
			ph += 2 * math.Pi * hz / rate
			var h float64
			for k := 1; k <= 10; k++ {
				h += math.Sin(float64(k)*ph) / float64(k)
			}
			v += pcm.DBFSToRMS(-24) * e * h
		}
		s[i] = int16(max(min(v, 32767), -32768))
	}
	return s
}

// When the guard takes a voice's first syllable for a knock and the next
// syllable starts the utterance, the held syllable is still sent: the
// utterance's pre-roll reaches back over it.
func TestVADTransientGuardKeepsAHeldFirstSyllable(t *testing.T) {
	const exAt = 1.0
	s := exCuse(exAt)
	for _, det := range []string{vad.KindEnergy, DetectorAuto} {
		t.Run(det, func(t *testing.T) {
			on, held := runPump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, s)
			off, _ := runPump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det, TransientDecayDB: -1}}, s)
			if held != 1 {
				t.Fatalf("%s = %d, want 1: the syllable is not held, the test does not test the pre-roll", MetricTransients, held)
			}
			if len(on) != 1 || len(off) != 1 {
				t.Fatalf("utterances: %v with the guard, %v without; want 1 each", on, off)
			}
			ex := time.Duration(exAt * float64(time.Second))
			if on[0] > ex {
				t.Errorf("the utterance starts at %v with the guard, after the first syllable at %v: it is lost", on[0], ex)
			}
			if on[0] < ex-DefaultPreRollMS*time.Millisecond-transientRetroMS*time.Millisecond {
				t.Errorf("the utterance starts at %v, more than the pre-roll and the retro window before the syllable at %v", on[0], ex)
			}
		})
	}
}

// startClock records, for each utterance, the fake clock's time when its
// first frame was handed over: when the pump decided to start it.
type startClock struct {
	collector
	clk       *clock.Fake
	decisions []time.Duration
	epoch     time.Time
}

func (s *startClock) SendMic(f *Frame) bool {
	if f.Flag == protocol.FlagStart {
		s.decisions = append(s.decisions, s.clk.Now().Sub(s.epoch))
	}
	return s.collector.SendMic(f)
}

// echoFreeGuard is an onset guard that never finds the frame echo-only
// and reports EchoFree as set.
type echoFreeGuard bool

func (echoFreeGuard) EchoDominated() bool { return false }
func (g echoFreeGuard) EchoFree() bool    { return bool(g) }

// With vad.gradual_start_ms the talker rising out of the room of knocks
// (a gradual onset) starts her utterance one 20 ms frame sooner, with the
// same pre-roll, while every knock (abrupt) is still held for the full min
// speech and starts none.
func TestVADGradualStartIsSoonerForVoicesOnly(t *testing.T) {
	const voiceAt = 4.0
	s, _ := knockRoom(voiceAt)
	run := func(t *testing.T, det string, gradual int, guard OnsetGuard) (*startClock, int64) {
		clk := clock.NewFake()
		sink := &startClock{clk: clk, epoch: clk.Now()}
		reg := metrics.NewRegistry()
		p, err := NewPump(Config{Mode: ModeVAD, VAD: VADConfig{Detector: det, GradualStartMS: gradual}}, &pcmSource{clk: clk, s: s}, sink, clk, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if guard != nil {
			p.SetOnsetGuard(guard)
		}
		if err := p.Run(context.Background()); !errors.Is(err, hw.ErrClosed) {
			t.Fatalf("Run: %v", err)
		}
		return sink, reg.Value(MetricTransients)
	}
	for _, tc := range []struct {
		name   string
		det    string
		guard  OnsetGuard
		sooner time.Duration
	}{
		{"energy", vad.KindEnergy, nil, 20 * time.Millisecond},
		{"auto", DetectorAuto, nil, 20 * time.Millisecond},
		// An echo canceller's guard: only while it hears no echo.
		{"guard echo-free", DetectorAuto, echoFreeGuard(true), 20 * time.Millisecond},
		{"guard with echo", DetectorAuto, echoFreeGuard(false), 0},
		{"guard without EchoFree", DetectorAuto, fixedGuard(false), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, heldFull := run(t, tc.det, DefaultMinSpeechMS, tc.guard)
			fast, heldFast := run(t, tc.det, 40, tc.guard)
			uf, us := full.utterances(), fast.utterances()
			if len(uf) != 1 || len(us) != 1 || len(fast.decisions) != 1 || len(full.decisions) != 1 {
				t.Fatalf("utterances: %d (decided at %v) with min speech only, %d (%v) with gradual_start_ms 40; want 1 each", len(uf), full.decisions, len(us), fast.decisions)
			}
			if heldFast != heldFull || heldFast == 0 {
				t.Errorf("%s = %d with gradual_start_ms 40, %d without; want equal and > 0 (the knocks are abrupt)", MetricTransients, heldFast, heldFull)
			}
			if d := full.decisions[0] - fast.decisions[0]; d != tc.sooner {
				t.Errorf("the talker's utterance is decided at %v with gradual_start_ms 40, %v without: %v sooner, want %v", fast.decisions[0], full.decisions[0], d, tc.sooner)
			}
			if uf[0][0].TS != us[0][0].TS {
				t.Errorf("the utterance's first frame is at %v with gradual_start_ms 40, %v without: the pre-roll must reach as far back", us[0][0].TS, uf[0][0].TS)
			}
		})
	}
}

// suppressedRoom is a mic behind an echo canceller whose suppressor holds
// the user's first syllable down while it rises (as over the robot's
// voice), then lets it through from its peak: Read returns the room (the
// linear output), DecisionFrame the suppressed frame, OnsetFrame the
// room's frame with use; frames the suppressor held are EchoDominated.
type suppressedRoom struct {
	pcmSource
	from, to int // samples the suppressor holds down
	cur, dec []int16
	held     bool
	use      bool
}

func (r *suppressedRoom) Read(dst []int16) (int, error) {
	at := r.pos
	n, err := r.pcmSource.Read(dst)
	if err != nil {
		return n, err
	}
	r.cur = append(r.cur[:0], dst[:n]...)
	r.dec = append(r.dec[:0], dst[:n]...)
	r.held = at < r.to && at+n > r.from
	if r.held {
		clear(r.dec)
	}
	return n, nil
}

func (r *suppressedRoom) EchoDominated() bool         { return r.held }
func (r *suppressedRoom) DecisionFrame() []int16      { return r.dec }
func (r *suppressedRoom) OnsetFrame() ([]int16, bool) { return r.cur, r.use }
func (r *suppressedRoom) Format() hw.AudioFormat      { return hw.MicFormat }

// canYou renders a -50 dBFS room with a knock (abrupt, decaying) at 0.6 s
// and from at a talker: a first syllable rising over 40 ms to -24 dBFS
// and falling 2.9 dB per 20 ms for 80 ms (a short vowel closed by a stop,
// "Can"), 150 ms of stop, then the voice again for 0.8 s.
func canYou(at float64) []int16 {
	knockAmp := pcm.DBFSToRMS(-22)
	return talker(31, at+1.5, 130, func(t float64) float64 {
		switch d := t - at; {
		case d >= 0 && d < 0.04:
			return d / 0.04
		case d >= 0.04 && d < 0.12:
			return math.Exp(-(d - 0.04) / 0.06)
		case d >= 0.27 && d < 1.07:
			return math.Min((d-0.27)/0.03, 1)
		}
		return 0
	}, func(t float64, rng *rand.Rand) float64 {
		if d := t - 0.6; d >= 0 && d < 0.4 {
			return knockAmp * math.Exp(-d/0.03) * rng.NormFloat64()
		}
		return 0
	})
}

// With an onset signal (capture.OnsetSignal, an echo canceller's linear
// output), the transient guard judges a syllable's attack where the
// suppressor did not make it abrupt: the talker's utterance starts on her
// first syllable instead of the second, while the knock, abrupt in both
// signals, is still held. Without use (or without the capability) the
// suppressed syllable looks like a knock and is held.
func TestVADTransientGuardJudgesOnsetsOnTheOnsetSignal(t *testing.T) {
	const at = 1.5
	s := canYou(at)
	from := int(at * 16000)
	run := func(t *testing.T, use bool) (*startClock, int64) {
		clk := clock.NewFake()
		sink := &startClock{clk: clk, epoch: clk.Now()}
		reg := metrics.NewRegistry()
		src := &suppressedRoom{pcmSource: pcmSource{clk: clk, s: s}, from: from, to: from + 40*16, use: use}
		p, err := NewPump(Config{Mode: ModeVAD, VAD: VADConfig{Detector: DetectorAuto}}, src, sink, clk, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); !errors.Is(err, hw.ErrClosed) {
			t.Fatalf("Run: %v", err)
		}
		return sink, reg.Value(MetricTransients)
	}
	on, heldOn := run(t, true)
	off, heldOff := run(t, false)
	if len(on.decisions) != 1 || len(off.decisions) != 1 {
		t.Fatalf("utterances decided at %v with the onset signal, %v without; want 1 each (the knock starts none)", on.decisions, off.decisions)
	}
	if heldOff != 2 || heldOn != 1 {
		t.Errorf("%s = %d with the onset signal, %d without; want 1 (the knock) and 2 (the knock and the suppressed syllable)", MetricTransients, heldOn, heldOff)
	}
	first := time.Duration(at * float64(time.Second))
	if d := on.decisions[0] - first; d > 160*time.Millisecond {
		t.Errorf("with the onset signal the utterance is decided %v after the first syllable's start; want within 160 ms (its peak, then min speech)", d)
	}
	if d := off.decisions[0] - first; d < 270*time.Millisecond {
		t.Errorf("without the onset signal the utterance is decided %v after the first syllable's start; want on the second syllable (270 ms on): the scene does not test the onset signal", d)
	}
}

// echoHeldRoom is a mic behind an echo canceller whose guards call the
// frames in [from, to) echo (EchoDominated) and let the rest through
// unchanged.
type echoHeldRoom struct {
	pcmSource
	from, to int
	held     bool
}

func (r *echoHeldRoom) Read(dst []int16) (int, error) {
	at := r.pos
	n, err := r.pcmSource.Read(dst)
	r.held = err == nil && at < r.to && at+n > r.from
	return n, err
}

func (r *echoHeldRoom) EchoDominated() bool { return r.held }

// A knock while the robot speaks whose first 40 ms the canceller's guards
// call echo: the transient guard still sees its abrupt start (the frames
// the VAD called speech but the guard echo are in its run), so the
// decaying tail the guards let through starts no utterance. Without the
// transient guard the tail alone does, so the room tests it.
func TestVADTransientGuardSeesAKnockTheEchoGuardHeld(t *testing.T) {
	const at = 1.0
	knockAmp := pcm.DBFSToRMS(-20)
	s := talker(41, 2.5, 130, func(float64) float64 { return 0 }, func(t float64, rng *rand.Rand) float64 {
		if d := t - at; d >= 0 && d < 0.5 {
			return knockAmp * math.Exp(-d/0.06) * rng.NormFloat64()
		}
		return 0
	})
	from := int(at * 16000)
	for _, det := range []string{vad.KindEnergy, DetectorAuto} {
		t.Run(det, func(t *testing.T) {
			run := func(decay float64) (int, int64) {
				clk := clock.NewFake()
				col := &collector{}
				reg := metrics.NewRegistry()
				src := &echoHeldRoom{pcmSource: pcmSource{clk: clk, s: s}, from: from, to: from + 40*16}
				p, err := NewPump(Config{Mode: ModeVAD, VAD: VADConfig{Detector: det, TransientDecayDB: decay}}, src, col, clk, reg, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Run(context.Background()); !errors.Is(err, hw.ErrClosed) {
					t.Fatalf("Run: %v", err)
				}
				return len(col.utterances()), reg.Value(MetricTransients)
			}
			if off, _ := run(-1); off != 1 {
				t.Fatalf("without the transient guard %d utterances, want 1 (the knock's tail): the room does not test the guard", off)
			}
			if on, held := run(0); on != 0 || held != 1 {
				t.Errorf("with the transient guard %d utterances and %s = %d; want 0 and 1 (the knock held from its start)", on, MetricTransients, held)
			}
		})
	}
}
