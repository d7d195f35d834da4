package vad

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/robot-agent/robot-agent/codec/pcm"
)

const trRate = 16000

// trSignal renders ms of a -60 dBFS white background plus events at
// 16 kHz; each event is f(t) for t >= 0 seconds after its start.
type trEvent struct {
	at  float64 // seconds
	amp func(t float64) float64
}

func trSignal(seed uint64, seconds float64, events ...trEvent) []int16 {
	rng := rand.New(rand.NewPCG(seed, 1))
	n := int(seconds * trRate)
	out := make([]int16, n)
	bg := pcm.DBFSToRMS(-60)
	for i := range out {
		t := float64(i) / trRate
		v := bg * rng.NormFloat64()
		for _, e := range events {
			if t >= e.at {
				v += e.amp(t-e.at) * rng.NormFloat64()
			}
		}
		out[i] = int16(max(min(v, 32767), -32768))
	}
	return out
}

// knock is a noise burst at peak dB (RMS) decaying with time constant tau.
func knock(peakDB, tau float64) func(float64) float64 {
	a := pcm.DBFSToRMS(peakDB)
	return func(t float64) float64 { return a * math.Exp(-t/tau) }
}

// voice rises linearly over rise seconds to levelDB and holds for hold
// seconds, with a 4 Hz syllable ripple of ±3 dB.
func voice(levelDB, rise, hold float64) func(float64) float64 {
	a := pcm.DBFSToRMS(levelDB)
	return func(t float64) float64 {
		if t > rise+hold {
			return 0
		}
		g := math.Min(t/rise, 1)
		return a * g * (1 + 0.4*math.Sin(2*math.Pi*4*t))
	}
}

// runGuard feeds g the frames of s the way the capture pump does: a frame
// more than 10 dB above the background is speech, every frame goes to
// Frame. It returns, for the
// first run, the index of the first frame the guard let start (-1: none
// while the run lasted) and how many frames the run lasted.
func runGuard(t *testing.T, g *TransientGuard, s []int16, frameMS int) (firstFree, run int) {
	t.Helper()
	fl := trRate * frameMS / 1000
	firstFree, started := -1, false
	for i := 0; i+fl <= len(s); i += fl {
		db := pcm.DBFS(s[i : i+fl])
		hold := g.Frame(s[i:i+fl], db >= -50)
		if db < -50 {
			if started {
				return firstFree, run
			}
			continue
		}
		started = true
		if !hold && firstFree < 0 {
			firstFree = run
		}
		run++
	}
	return firstFree, run
}

func newGuard(t *testing.T, frameMS int) *TransientGuard {
	t.Helper()
	g, err := NewTransientGuard(TransientConfig{FrameMS: frameMS})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Knocks, claps and clunks of 5..60 ms time constant, 15..35 dB above the
// room, wherever their attack falls in a frame: the guard holds the run
// from its third frame (the pump's default min speech of 60 ms) to its
// end, so no utterance starts on them.
func TestTransientGuardHoldsDecayingImpulses(t *testing.T) {
	for _, frameMS := range []int{20, 10} {
		for _, tau := range []float64{0.005, 0.01, 0.02, 0.04, 0.06} {
			for _, peak := range []float64{-45, -25} {
				for off := 0.0; off < 0.02; off += 0.0025 {
					name := fmt.Sprintf("frame%d/tau%.0fms/peak%.0f/offset%.1fms", frameMS, tau*1000, peak, off*1000)
					s := trSignal(uint64(off*1e4)+1, 1, trEvent{at: 0.2 + off, amp: knock(peak, tau)})
					g := newGuard(t, frameMS)
					fl := trRate * frameMS / 1000
					minSpeech := (60 + frameMS - 1) / frameMS
					// Feed the run and check every frame from minSpeech on.
					n := 0
					for i := 0; i+fl <= len(s); i += fl {
						db := pcm.DBFS(s[i : i+fl])
						hold := g.Frame(s[i:i+fl], db >= -50)
						if db < -50 {
							if n > 0 {
								break
							}
							continue
						}
						n++
						if n >= minSpeech && !hold {
							t.Errorf("%s: frame %d of the run (%.1f dBFS) released", name, n, db)
							break
						}
					}
				}
			}
		}
	}
}

// Impulses in series — a servo's clunk (two clicks 30..80 ms apart), a
// dropped object bouncing (impacts at shrinking intervals, each quieter),
// a burst of typing — are held as a whole: each new impact is a new onset
// that decays again.
func TestTransientGuardHoldsSeries(t *testing.T) {
	series := map[string][]trEvent{}
	for _, gap := range []float64{0.03, 0.05, 0.08} {
		series[fmt.Sprintf("clunk%.0fms", gap*1000)] = []trEvent{
			{at: 0.2, amp: knock(-22, 0.015)}, {at: 0.2 + gap, amp: knock(-24, 0.015)}}
	}
	var bounce []trEvent
	at, gap, amp := 0.2, 0.2, -20.0
	for range 5 {
		bounce = append(bounce, trEvent{at: at, amp: knock(amp, 0.006)})
		at += gap
		gap *= 0.6
		amp -= 4
	}
	series["bounces"] = bounce
	var typing []trEvent
	for k := range 6 {
		typing = append(typing, trEvent{at: 0.2 + 0.11*float64(k) + 0.013*float64(k%3), amp: knock(-30, 0.003)})
	}
	series["typing"] = typing
	for name, ev := range series {
		s := trSignal(9, 1.5, ev...)
		g := newGuard(t, 20)
		n := 0
		for i := 0; i+320 <= len(s); i += 320 {
			db := pcm.DBFS(s[i : i+320])
			hold := g.Frame(s[i:i+320], db >= -50)
			if db < -50 {
				n = 0
				continue
			}
			n++
			if n >= 3 && !hold {
				t.Errorf("%s: frame %d of a run (%.1f dBFS at %d ms) released", name, n, db, i/16)
			}
		}
	}
}

// A run is never held longer than transientMaxRunMS, even a series of
// impulses that goes on.
func TestTransientGuardMaxRun(t *testing.T) {
	g := newGuard(t, 20)
	for i := range 100 {
		// A click every 3 frames: peak, decay, decay.
		lv, attack := []float64{-20, -30, -40}[i%3], []float64{30, 0, 0}[i%3]
		hold := g.Observe(lv, attack)
		if i*20 >= transientMaxRunMS && hold {
			t.Fatalf("frame %d (%d ms into the run) still held, want release by %d ms", i, i*20, transientMaxRunMS)
		}
		if i == 10 && !hold {
			t.Fatalf("a click every 60 ms not held at frame %d", i)
		}
	}
}

// Voices rising into their first syllable over 5..80 ms, loud or soft,
// are never held: at the pump's default min speech (60 ms) the utterance
// starts at the same frame as without the guard.
func TestTransientGuardPassesSpeechOnsets(t *testing.T) {
	for _, frameMS := range []int{20, 10, 40} {
		for _, rise := range []float64{0.005, 0.02, 0.04, 0.08} {
			for _, level := range []float64{-40, -20} {
				for off := 0.0; off < 0.02; off += 0.005 {
					name := fmt.Sprintf("frame%d/rise%.0fms/level%.0f/offset%.0fms", frameMS, rise*1000, level, off*1000)
					s := trSignal(7, 1.2, trEvent{at: 0.2 + off, amp: voice(level, rise, 0.6)})
					free, run := runGuard(t, newGuard(t, frameMS), s, frameMS)
					minSpeech := (60 + frameMS - 1) / frameMS
					if run < minSpeech {
						t.Fatalf("%s: run of %d frames, the test needs speech", name, run)
					}
					if free < 0 || free >= minSpeech {
						t.Errorf("%s: first frame the guard lets start is %d, want < %d (not held)", name, free, minSpeech)
					}
				}
			}
		}
	}
}

// A voice that starts in a knock's tail is let through within a frame of
// its rise above the tail.
func TestTransientGuardReleasesVoiceInTail(t *testing.T) {
	for _, delay := range []float64{0.04, 0.08, 0.15} {
		s := trSignal(3, 1.5, trEvent{at: 0.2, amp: knock(-20, 0.04)}, trEvent{at: 0.2 + delay, amp: voice(-30, 0.02, 0.8)})
		free, _ := runGuard(t, newGuard(t, 20), s, 20)
		// The voice is above the tail once the tail has decayed below -30
		// dBFS + a few dB: tau 40 ms, from -20: about 92 ms after the knock.
		limit := int(math.Ceil((math.Max(delay, 0.092)+0.02)/0.02)) + 1
		if free < 0 || free > limit {
			t.Errorf("voice %.0f ms after the knock: released at frame %d of the run, want <= %d", delay*1000, free, limit)
		}
	}
}

// A run held as a transient is released after transientMaxHoldMS whatever
// its shape: a very slow decay (2 dB per 20 ms over a second) is held at
// most that long.
func TestTransientGuardMaxHold(t *testing.T) {
	g := newGuard(t, 20)
	level, attack := -10.0, 30.0
	for i := range 60 {
		hold := g.Observe(level, attack)
		attack = 0
		level -= 2
		if i*20 >= transientMaxHoldMS && hold {
			t.Fatalf("frame %d (%d ms into the run) still held, want release by %d ms", i, i*20, transientMaxHoldMS)
		}
		if i == 5 && !hold {
			t.Fatalf("a steady 2 dB/frame decay was not held at frame %d", i)
		}
	}
}

// Once latched, a frame that stops decaying (the tail reaching the room's
// noise) stays held; a rise of transientRiseDB releases it at once if it
// is gradual (a voice in the tail) and also transientRiseDB over the frame
// the run latched at (a rise under that is the tail wobbling on its
// background); an abrupt one is a new onset, held
// until its peak and the frame after are seen: released if it holds its
// level (a voice starting with a plosive), held if it decays (the next
// click); Reset forgets.
func TestTransientGuardLatch(t *testing.T) {
	type step struct {
		db, attack float64
		hold       bool
	}
	check := func(name string, g *TransientGuard, steps []step) {
		t.Helper()
		for i, s := range steps {
			if got := g.Observe(s.db, s.attack); got != s.hold {
				t.Fatalf("%s: frame %d (%v dBFS, attack %v dB): hold %v, want %v", name, i, s.db, s.attack, got, s.hold)
			}
		}
	}
	knock := []step{
		{-20, 30, false}, // an abrupt peak
		{-26, 0, true},   // decay 1
		{-32, 0, true},   // decay 2, 12 dB: latched
		{-33, 0, true},   // flat tail: still held
		{-32, 0, true},   // a small wobble: held
	}
	g := newGuard(t, 20)
	check("click, click", g, append(knock, []step{
		{-24, 25, true}, // a rise, abrupt: the next click
		{-31, 0, true},  // it decays
		{-38, 0, true},  // and on
		{-28, 2, false}, // a rise, gradual: a voice in the tail
		{-40, 0, false}, // released for the rest of the run
		{-20, 30, false},
	}...))
	// The tail flattens onto a background that wobbles by more than
	// transientRiseDB (an echo canceller's residual of the robot's voice):
	// held while under the latch frame's -32 dBFS + 3 dB.
	g.Reset()
	check("wobbling tail", g, append(knock, []step{
		{-36, 0, true},   // the background dips
		{-32.5, 0, true}, // and comes back, 3.5 dB: still under the latch frame + 3 dB
		{-36.5, 0, true},
		{-29.5, 2, true}, // 7 dB, but 2.5 dB over the latch frame: held
		{-26, 2, false},  // a voice over the tail
	}...))
	g.Reset()
	check("after Reset", g, knock[:3])
	g.Reset()
	check("voice after a click", g, append(knock, []step{
		{-28, 14, true},   // a rise, abrupt (a plosive), peak may be next
		{-27.5, 0, true},  // the peak
		{-27.5, 0, false}, // it holds: a voice
	}...))
	// A plosive burst louder than the vowel after it: the vowel holds its
	// level under the burst's and is let through once it is above the
	// line (here the second frame after the burst).
	g.Reset()
	check("burst, vowel", g, []step{{-16, 13, false}, {-18, 0, true}, {-18, 0, true}, {-18.2, 0, false}, {-25, 0, false}})
	// A gradual onset is never held, whatever follows.
	g.Reset()
	check("gradual", g, []step{{-20, 8, false}, {-26, 0, false}, {-32, 0, false}, {-40, 0, false}})
	// One fall then a recovery: a syllable's dip, not a transient.
	g.Reset()
	check("dip", g, []step{{-20, 20, false}, {-23, 0, true}, {-21.5, 0, false}, {-30, 0, false}})
}

func TestTransientGuardConfig(t *testing.T) {
	for _, c := range []TransientConfig{
		{FrameMS: 5},
		{FrameMS: 80},
		{FrameMS: 20, DecayDB: -1},
		{FrameMS: 20, DecayDB: 21},
		{FrameMS: 20, DecayDB: math.NaN()},
	} {
		if _, err := NewTransientGuard(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err %v, want ErrConfig", c, err)
		}
	}
	for in, want := range map[float64]float64{0: DefaultTransientDecayDB, -1: 0, 3: 3} {
		if got := TransientDecay(in); got != want {
			t.Errorf("TransientDecay(%v) = %v, want %v", in, got, want)
		}
	}
	// The decay scales with the frame: 1.5 dB per 20 ms is 3 per 40 ms.
	for _, tc := range []struct {
		frameMS int
		fall    float64
		hold    bool
	}{{20, 2.5, true}, {40, 2.5, false}, {40, 3.5, true}} {
		g, err := NewTransientGuard(TransientConfig{FrameMS: tc.frameMS})
		if err != nil {
			t.Fatal(err)
		}
		g.Observe(-20, 30)
		if got := g.Observe(-20-tc.fall, 0); got != tc.hold {
			t.Errorf("%d ms frames: a %v dB fall after an abrupt peak: hold %v, want %v", tc.frameMS, tc.fall, got, tc.hold)
		}
	}
}

func ExampleTransientGuard() {
	g, _ := NewTransientGuard(TransientConfig{FrameMS: 20})
	// A knock: its level (dBFS per 20 ms frame) jumps 30 dB within 4 ms,
	// peaks and decays.
	for i, db := range []float64{-18, -27, -36, -44} {
		fmt.Print(g.Observe(db, []float64{30, 0, 0, 0}[i]), ";")
	}
	fmt.Println()
	// A voice: it rises gradually and holds.
	g.Reset()
	for i, db := range []float64{-40, -30, -29, -31} {
		fmt.Print(g.Observe(db, []float64{6, 5, 1, 0}[i]), ";")
	}
	fmt.Println()
	// Output:
	// false;true;true;true;
	// false;false;false;false;
}

func TestTransientGuardNoAllocs(t *testing.T) {
	g := newGuard(t, 20)
	s := trSignal(1, 0.5, trEvent{at: 0.1, amp: knock(-20, 0.05)})
	i := 0
	if n := testing.AllocsPerRun(20, func() {
		g.Frame(s[i*320:(i+1)*320], true)
		i++
	}); n != 0 {
		t.Errorf("Frame allocates %.1f times", n)
	}
}

// GradualOnset tells a voice rising over tens of milliseconds (released
// as gradual from the run's second frame) from knocks and clunks (abrupt:
// never gradual), and forgets it at Reset.
func TestTransientGuardGradualOnset(t *testing.T) {
	gradualAt := func(s []int16, frameMS int) (at int, run int) {
		g := newGuard(t, frameMS)
		fl := trRate * frameMS / 1000
		at = -1
		for i := 0; i+fl <= len(s); i += fl {
			speech := pcm.DBFS(s[i:i+fl]) >= -50
			g.Frame(s[i:i+fl], speech)
			if !speech {
				if run > 0 {
					break
				}
				continue
			}
			if g.GradualOnset() && at < 0 {
				at = run
			}
			run++
		}
		if g.GradualOnset() {
			t.Errorf("GradualOnset true after the run ended (Reset)")
		}
		return at, run
	}
	for _, frameMS := range []int{20, 10} {
		for _, rise := range []float64{0.04, 0.08} {
			for off := 0.0; off < 0.02; off += 0.005 {
				s := trSignal(9, 1.2, trEvent{at: 0.2 + off, amp: voice(-40, rise, 0.6)})
				if at, run := gradualAt(s, frameMS); at != 1 {
					t.Errorf("frame %d ms, voice rising over %.0f ms, offset %.0f ms: gradual from frame %d of a run of %d, want 1 (the second)", frameMS, rise*1000, off*1000, at, run)
				}
			}
		}
		for _, tau := range []float64{0.005, 0.02, 0.06} {
			for _, peak := range []float64{-35, -20} {
				for off := 0.0; off < 0.02; off += 0.005 {
					s := trSignal(5, 1.2, trEvent{at: 0.2 + off, amp: knock(peak, tau)})
					if at, run := gradualAt(s, frameMS); at >= 0 {
						t.Errorf("frame %d ms, knock %.0f dB tau %.0f ms, offset %.0f ms: gradual from frame %d of a run of %d, want never", frameMS, peak, tau*1000, off*1000, at, run)
					}
				}
			}
		}
	}
}
