package aec

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// lagOf returns the lag (samples, 0..maxLag) at which out best matches in,
// and the normalised correlation there.
func lagOf(in, out []int16, skip, maxLag int) (int, float64) {
	best, bl := -1.0, 0
	for lag := 0; lag <= maxLag; lag++ {
		var xy, xx, yy float64
		for i := skip; i+lag < len(out); i++ {
			x, y := float64(in[i]), float64(out[i+lag])
			xy, xx, yy = xy+x*y, xx+x*x, yy+y*y
		}
		if r := xy / (1e-9 + math.Sqrt(xx*yy)); r > best {
			best, bl = r, lag
		}
	}
	return bl, best
}

// A canceller's OutputDelay is the lag its output really has (the far end
// silent, the near end white noise, which every canceller passes), and the
// dual-path uplink's linear output lags exactly as much as the main
// canceller's, so the gate crossfades between aligned signals.
func TestOutputDelayIsWhatTheCancellerDoes(t *testing.T) {
	var opts []Options
	for _, ns := range []bool{false, true} {
		opts = append(opts, Options{Kind: KindWebRTC, NoiseSuppression: ns, Uplink: UplinkCanceller})
		if slices.Contains(Available(), KindSpeex) {
			opts = append(opts, Options{Kind: KindWebRTC, NoiseSuppression: ns, Uplink: UplinkLinearGated})
		}
	}
	if !slices.Contains(Available(), KindWebRTC) {
		t.Skip("no WebRTC canceller in this build")
	}
	for _, o := range opts {
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		far, out := make([]int16, FrameSamples), make([]int16, FrameSamples)
		var in, main, lin []int16
		lo, _ := c.(linearOuter)
		for range 200 {
			near := make([]int16, FrameSamples)
			for i := range near {
				near[i] = int16(rng.NormFloat64() * 3000)
			}
			in = append(in, near...)
			c.Process(out, near, far)
			main = append(main, out...)
			if lo != nil {
				lin = append(lin, lo.Linear()...)
			}
		}
		c.Close()
		od, ok := c.(outputDelayer)
		if !ok {
			t.Fatalf("%+v: no OutputDelay", o)
		}
		lag, r := lagOf(in, main, Rate/2, 400)
		if lag != od.OutputDelay() || r < 0.9 {
			t.Errorf("%+v: output lags %d samples (r %.2f), OutputDelay says %d", o, lag, r, od.OutputDelay())
		}
		if lo != nil {
			if l2, r2 := lagOf(in, lin, Rate/2, 400); l2 != lag || r2 < 0.9 {
				t.Errorf("%+v: linear output lags %d samples (r %.2f), the canceller's %d", o, l2, r2, lag)
			}
		}
	}
}
