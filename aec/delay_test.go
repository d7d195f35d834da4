package aec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/robot-agent/robot-agent/room"
)

// delayRig feeds the estimator a far end of noise bursts (speech-like
// on/off envelope) and a mic that is the far end delayed.
type delayRig struct {
	d     *DelayEstimator
	rng   *rand.Rand
	far   []int16 // history, so the mic can look back
	level float64
	left  int
}

func newDelayRig(seed uint64) *delayRig {
	return &delayRig{d: NewDelayEstimator(400), rng: rand.New(rand.NewPCG(seed, 3))}
}

// run pushes seconds of audio with the mic delayed by delay samples.
func (r *delayRig) run(seconds float64, delay int) {
	far, mic := make([]int16, FrameSamples), make([]int16, FrameSamples)
	for range int(seconds * 100) {
		for i := range far {
			if r.left == 0 {
				r.left = 800 + r.rng.IntN(4000)
				r.level = 0
				if r.rng.IntN(3) > 0 {
					r.level = 2000 + 6000*r.rng.Float64()
				}
			}
			r.left--
			far[i] = int16(r.level * (r.rng.Float64()*2 - 1))
			r.far = append(r.far, far[i])
			j := len(r.far) - 1 - delay
			mic[i] = 0
			if j >= 0 {
				mic[i] = r.far[j] / 2
			}
		}
		r.d.Push(far, mic)
	}
}

func (r *delayRig) estimate(t *testing.T) int {
	t.Helper()
	d, ok := r.d.Delay()
	if !ok {
		t.Fatal("no estimate")
	}
	return d
}

func near(a, b, tol int) bool { return a >= b-tol && a <= b+tol }

func TestDelayEstimatorFindsAndFollows(t *testing.T) {
	const ms = Rate / 1000
	for seed := uint64(1); seed <= 3; seed++ {
		r := newDelayRig(seed)
		r.run(3, 80*ms)
		if d := r.estimate(t); !near(d, 80*ms, 2*envStep) {
			t.Fatalf("seed %d: %d ms, want 80", seed, d/ms)
		}
		// The path grows by 20 ms: kept (the far end still leads).
		r.run(4, 100*ms)
		if d := r.estimate(t); !near(d, 80*ms, 2*envStep) {
			t.Fatalf("seed %d: delay grew by 20 ms: estimate moved to %d ms, want kept at 80", seed, d/ms)
		}
		// It shrinks below the estimate: followed (the far end would come
		// after the echo).
		r.run(4, 60*ms)
		if d := r.estimate(t); !near(d, 60*ms, 2*envStep) {
			t.Fatalf("seed %d: delay shrank to 60 ms: estimate %d ms", seed, d/ms)
		}
		// It grows by more than the slack: followed.
		r.run(4, 150*ms)
		if d := r.estimate(t); !near(d, 150*ms, 2*envStep) {
			t.Fatalf("seed %d: delay grew to 150 ms: estimate %d ms", seed, d/ms)
		}
	}
}

// While the near end talks over the far end (NearEnd) the estimator takes
// no new delay, however well a window holding the user correlates at
// another lag; once the user has been out of the window for its length it
// follows again. A hold that never lapses gives up after maxNearHold (a
// real delay change whose uncancelled echo passes as the user).
func TestDelayEstimatorHoldsWhileTheNearEndTalks(t *testing.T) {
	const ms = Rate / 1000
	r := newDelayRig(7)
	want := func(when string, d int) {
		t.Helper()
		if got := r.estimate(t); !near(got, d*ms, 4*ms) {
			t.Fatalf("%s: %d ms, want %d", when, got/ms, d)
		}
	}
	// talk pushes frames of 10 ms with the mic at lag ms, each marked.
	talk := func(frames, lag int) {
		for range frames {
			r.run(0.01, lag*ms)
			r.d.NearEnd()
		}
	}
	r.run(4, 60*ms)
	want("before", 60)
	// The mic now correlates at 200 ms; NearEnd marks every frame for
	// 1 s: the estimate stays.
	talk(100, 200)
	want("while the near end talks", 60)
	// The hold lapses 2 s (the window) after the last mark.
	r.run(1.5, 200*ms)
	want("1.5 s after the near end (still in the window)", 60)
	r.run(3, 200*ms)
	want("after the hold", 200)
	// Marked without end, the hold gives up after maxNearHold.
	talk(600, 100)
	want("after 6 s of marks (the hold gave up)", 100)
}

// A melody (a plucked note every 300 ms) has an envelope that repeats
// within the search: through a room, the mic correlates with the far end
// 300 ms off the echo about as well as at the echo. The estimator takes
// no lag from such a window: the estimate from the speech-like bursts
// before stays, and the melody alone gives the echo's or none. (Without
// the test for a second peak the estimate was 300 ms off the echo for
// 900-950 of the 2000 frames, moving between the two; duplex-bench with a
// melody as the reply: 41 shifts of the delay, 27 false barge-ins in 10
// replies.)
func TestDelayEstimatorIgnoresARepeatingEnvelope(t *testing.T) {
	const ms = Rate / 1000
	const n = 20 * Rate
	far := make([]int16, n)
	for i := range far {
		note := i / (300 * ms)
		t := float64(i%(300*ms)) / Rate
		f := []float64{262, 330, 392, 523, 392, 330}[note%6]
		far[i] = int16(8000 * math.Exp(-t/0.08) * math.Sin(2*math.Pi*f*t))
	}
	for _, delayMS := range []int{40, 60, 80} {
		for _, after := range []bool{false, true} {
			p, err := room.New(room.Config{DelayMS: float64(delayMS), EchoGainDB: -6, RT60: 0.3, DRRDB: 6, DriftPPM: 100, Noise: room.NoisePink, NoiseDBFS: -60, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			mic := echoOf(p, far)
			r := newDelayRig(5)
			name := fmt.Sprintf("echo at %d ms, melody alone", delayMS)
			if after {
				name = fmt.Sprintf("echo at %d ms, melody after bursts", delayMS)
				r.run(4, delayMS*ms)
				if e := r.estimate(t); !near(e, delayMS*ms, 2*envStep) {
					t.Fatalf("%s: bursts gave %d ms", name, e/ms)
				}
			}
			moved := 0
			for off := 0; off+FrameSamples <= n; off += FrameSamples {
				r.d.Push(far[off:off+FrameSamples], mic[off:off+FrameSamples])
				if e, ok := r.d.Delay(); ok && !near(e, delayMS*ms, 2*envStep) {
					moved++
				}
			}
			if moved > 0 {
				e, _ := r.d.Delay()
				t.Errorf("%s: the estimate was off the echo for %d of %d frames (last %d ms; %d windows ambiguous)", name, moved, n/FrameSamples, e/ms, r.d.ambiguous)
			}
		}
	}
}
