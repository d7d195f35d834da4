package duplex

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// EstimateIR recovers a reverberant echo path (direct path, reflections,
// a decaying tail 60 dB down in 0.4 s, as much energy as the direct path)
// from 3 s of pink-ish noise recorded through it with a noise floor 60 or
// 40 dB under the echo: the shape (correlation), the gain and the late
// reverberation's energy, also where the tail lies under the recording's
// floor (compensated); asked for twice the room's length, it returns
// nothing after the room's tail but the tail's decay (the deconvolution's
// noise floor, summed over the extra taps, would be a second,
// noise-like echo).
func TestEstimateIRRecoversTheRoom(t *testing.T) {
	const rate = 16000
	for _, floor := range []float64{3, 30} {
		rng := rand.New(rand.NewPCG(3, 4))
		h := make([]float64, 6400) // 0.4 s
		h[0] = 0.5
		h[37], h[90], h[201] = 0.2, -0.15, 0.1
		var tail float64
		for k := 240; k < len(h); k++ {
			v := rng.NormFloat64() * math.Exp(-6.9*float64(k)/rate/0.4)
			h[k] += v
			tail += v * v
		}
		for k := 240; k < len(h); k++ {
			h[k] *= math.Sqrt(0.25 / tail) // tail energy = direct energy
		}
		played := make([]int16, 3*rate+rate/2)
		var lp float64
		for i := range 3 * rate {
			lp = 0.9*lp + 0.1*rng.NormFloat64() // more low than high, as pink noise
			played[i] = int16(max(-32767, min(32767, 4000*(lp*3+0.3*rng.NormFloat64()))))
		}
		const head = 3200 // the recording starts 0.2 s early
		recorded := make([]int16, head+len(played)+len(h))
		for i := range recorded {
			acc := rng.NormFloat64() * floor // the recording's noise floor
			for k, g := range h {
				if j := i - head - k; j >= 0 && j < len(played) && g != 0 {
					acc += g * float64(played[j])
				}
			}
			recorded[i] = int16(max(-32768, min(32767, math.Round(acc))))
		}
		e, err := MeasureEcho(played, recorded, rate, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		lag := int(e.Delay.Seconds()*rate + 0.5)
		if lag != head {
			t.Fatalf("floor %g: direct path at %d samples, want %d", floor, lag, head)
		}
		const pre = 80
		ir, err := EstimateIR(played, recorded, rate, lag, pre, 2*len(h))
		if err != nil {
			t.Fatal(err)
		}
		// Energies from 100 ms (beyond a canceller's filter) and 250 ms
		// (40 dB down the decay) on, estimated against true.
		var c, ee, eh, late, lateH, vlate, vlateH float64
		for k, g := range h {
			v := ir[k+pre]
			c += v * g
			ee += v * v
			eh += g * g
			if k >= 1600 {
				late, lateH = late+v*v, lateH+g*g
			}
			if k >= 4000 {
				vlate, vlateH = vlate+v*v, vlateH+g*g
			}
		}
		var before, after float64 // nothing before the direct path, the decay's end after the room's
		for _, v := range ir[:pre] {
			before += v * v
		}
		for _, v := range ir[len(h)+pre:] {
			after += v * v
		}
		db := func(a, b float64) float64 { return 10 * math.Log10(a/b) }
		corr := c / math.Sqrt(ee*eh)
		t.Logf("floor %g: correlation %.4f, energy %+.2f dB, from 100 ms %+.2f dB, from 250 ms %+.2f dB, before %.1f dB, after %.1f dB",
			floor, corr, db(ee, eh), db(late, lateH), db(vlate, vlateH), db(before, eh), db(after, eh))
		if corr < 0.99 || math.Abs(db(ee, eh)) > 0.5 || math.Abs(db(late, lateH)) > 1 || math.Abs(db(vlate, vlateH)) > 2 || db(before, eh) > -30 || db(after, eh) > -50 {
			t.Errorf("floor %g: correlation %.4f, energy %+.2f dB, from 100 ms %+.2f dB, from 250 ms %+.2f dB, before the direct path %.1f dB, after the room's end %.1f dB; want ≥ 0.99, ±0.5, ±1, ±2 dB, < −30 dB, < −50 dB",
				floor, corr, db(ee, eh), db(late, lateH), db(vlate, vlateH), db(before, eh), db(after, eh))
		}
		if _, err := EstimateIR(played[:100], recorded, rate, lag, pre, 100); err == nil {
			t.Error("100 samples played: no error")
		}
		if _, err := EstimateIR(played, recorded[:len(played)], rate, lag, pre, 100); err == nil {
			t.Error("a recording that ends before the played signal's echo: no error")
		}
	}
}
