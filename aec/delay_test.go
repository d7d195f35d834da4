package aec

import (
	"math/rand/v2"
	"testing"
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
