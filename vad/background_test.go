package vad

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// talkerOf returns n samples of a vowel-like talker whose syllables differ
// (length 80–330 ms, gaps 20–220 ms, F0 and two formants drawn per
// syllable, F0 gliding within it), at arbitrary scale.
func talkerOf(n int, rng *rand.Rand) []float64 {
	out := make([]float64, n)
	base := 90 + 160*rng.Float64()
	var ph float64
	gains := make([]float64, 64)
	for at := rng.IntN(4000); at < n; {
		syl := (80 + rng.IntN(250)) * 16
		f0 := base * (0.8 + 0.4*rng.Float64())
		glide := 0.3 * (rng.Float64() - 0.5)
		f1, f2 := 300+600*rng.Float64(), 900+1600*rng.Float64()
		for i := 0; i < syl && at+i < n; i++ {
			if i%160 == 0 {
				f := f0 * (1 + glide*float64(i)/float64(syl))
				for h := range gains {
					hf := float64(h+1) * f
					gains[h] = 1/(1+math.Pow((hf-f1)/150, 2)) + 0.5/(1+math.Pow((hf-f2)/200, 2)) + 0.02
					if hf > 4000 {
						gains[h] = 0
					}
				}
			}
			f := f0 * (1 + glide*float64(i)/float64(syl))
			ph += 2 * math.Pi * f / 16000
			env := math.Sin(math.Pi * float64(i) / float64(syl))
			var v float64
			for h, g := range gains {
				if g != 0 {
					v += g * math.Sin(float64(h+1)*ph)
				}
			}
			out[at+i] = env * v
		}
		at += syl + (20+rng.IntN(200))*16
	}
	return out
}

// babbleOf returns n samples of six such talkers at unit RMS: a babble
// with pitch, which the spectral model calls speech.
func babbleOf(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]float64, n)
	for range 6 {
		v := talkerOf(n, rng)
		for i := range out {
			out[i] += v[i]
		}
	}
	var e float64
	for _, v := range out {
		e += v * v
	}
	g := 1 / math.Sqrt(e/float64(n))
	for i := range out {
		out[i] *= g
	}
	return out
}

// frameCalls runs d over x in 20 ms frames and returns the decisions.
func frameCalls(d Detector, x []int16) []bool {
	out := make([]bool, len(x)/320)
	for k := range out {
		out[k] = d.Speech(x[k*320:(k+1)*320], false)
	}
	return out
}

func guarded() Detector {
	d, err := New(Options{Kind: KindSpectral})
	if err != nil {
		panic(err)
	}
	return d
}

func unguarded() Detector {
	d, err := New(Options{Kind: KindSpectral, BackgroundDB: -1})
	if err != nil {
		panic(err)
	}
	return d
}

// In a babble with pitch at -30 dBFS, with a nearer talker's syllables 15
// dB above it every few seconds, the guarded detector calls few of the
// babble-only frames speech and still finds the talker; without the guard
// (the same detector, BackgroundDB -1) almost every frame is speech, so
// the scene is one the guard exists for.
func TestBackgroundGuardIgnoresBabble(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		const n = 30 * 16000
		bab := babbleOf(n, seed)
		talker, truth := syllables(n, 130, 200, 80, rand.New(rand.NewPCG(seed, 5)))
		// The talker speaks for 1.5 s every 5 s, from 4 s on.
		near := make([]bool, n/320)
		gb := 32768 * math.Pow(10, -30.0/20)
		gt := 32768 * math.Pow(10, -15.0/20) / rmsOf(talker, truth)
		x := make([]int16, n)
		for i := range x {
			v := bab[i] * gb
			if t := i % (5 * 16000); i >= 4*16000 && t < 3*16000/2 {
				v += talker[i] * gt
				near[i/320] = true
			}
			x[i] = int16(max(min(v, 32767), -32768))
		}
		score := func(calls []bool) (fp, recall float64) {
			var nf, f, nt, tp int
			for k, c := range calls {
				if k < 200 {
					continue // the first 4 s: the guard is still learning
				}
				switch {
				case near[k] && truth[k] == 1:
					nt++
					if c {
						tp++
					}
				case !near[k] && (k == 0 || !near[k-5]) && !near[max(k-15, 0)]:
					nf++ // babble alone, 300 ms after the talker at least
					if c {
						f++
					}
				}
			}
			return float64(f) / float64(nf), float64(tp) / float64(nt)
		}
		fp, rec := score(frameCalls(guarded(), x))
		fp0, rec0 := score(frameCalls(unguarded(), x))
		t.Logf("seed %d: guard: babble frames called speech %.1f %%, talker found %.2f; without: %.1f %%, %.2f", seed, 100*fp, rec, 100*fp0, rec0)
		if fp0 < 0.5 {
			t.Errorf("seed %d: without the guard only %.1f %% of the babble is speech: the scene does not test the guard", seed, 100*fp0)
		}
		if fp > 0.05 {
			t.Errorf("seed %d: with the guard %.1f %% of the babble-only frames are speech, want ≤ 5 %%", seed, 100*fp)
		}
		if rec < 0.8 {
			t.Errorf("seed %d: with the guard the talker 15 dB over the babble is found in %.2f of his frames, want ≥ 0.8", seed, rec)
		}
	}
}

// rmsOf is the RMS of v over the frames truth marks 1.
func rmsOf(v []float64, truth []int) float64 {
	var e float64
	var n int
	for k, on := range truth {
		if on == 1 {
			for _, s := range v[k*320 : (k+1)*320] {
				e += s * s
			}
			n += 320
		}
	}
	return math.Sqrt(e / float64(n))
}

// A single talker who does not stop for 60 s (short syllable gaps), in
// pink noise at 10 and 20 dB and alone, loses no frames to the guard, and
// stationary noise alone never turns it on.
func TestBackgroundGuardLeavesOneTalkerAlone(t *testing.T) {
	const n = 60 * 16000
	for _, snr := range []float64{math.Inf(1), 20, 10} {
		v, truth := syllables(n, 160, 220, 60, rand.New(rand.NewPCG(9, 9)))
		var x []int16
		if math.IsInf(snr, 1) {
			x = mix(v, truth, -26, 60, 3) // pink noise 60 dB down: a quiet room
		} else {
			x = mix(v, truth, -26, snr, 3)
		}
		g, u := frameCalls(guarded(), x), frameCalls(unguarded(), x)
		lost := 0
		for k := range g {
			if u[k] && !g[k] {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("SNR %v dB: the guard took %d of %d frames from a single talker", snr, lost, len(g))
		}
	}
	p := pinkGen{rng: rand.New(rand.NewPCG(4, 4))}
	x := make([]int16, n)
	for i := range x {
		x[i] = int16(p.next() * 3000)
	}
	d := NewSpectral(SpectralConfig{BackgroundDB: DefaultBackgroundDB})
	for k := 0; (k+1)*320 <= len(x); k++ {
		d.Speech(x[k*320:(k+1)*320], false)
		if d.bg.on {
			t.Fatalf("pink noise alone turned the guard on at %.2f s", float64(k)*0.02)
		}
	}
}

func TestBackgroundOption(t *testing.T) {
	if _, err := New(Options{Kind: KindSpectral, BackgroundDB: 41}); !errors.Is(err, ErrConfig) {
		t.Errorf("BackgroundDB 41: err %v, want ErrConfig", err)
	}
	for _, tc := range []struct {
		kind string
		db   float64
		want float64 // 0: no guard
	}{
		{KindSpectral, 0, DefaultBackgroundDB},
		{KindVoiced, 0, DefaultBackgroundDB},
		{KindSpectral, 6, 6},
		{KindSpectral, -1, 0},
	} {
		d, err := New(Options{Kind: tc.kind, BackgroundDB: tc.db})
		if err != nil {
			t.Fatal(err)
		}
		s := d.(*Spectral)
		got := 0.0
		if s.bg != nil {
			got = s.bg.margin
		}
		if got != tc.want {
			t.Errorf("%s BackgroundDB %v: margin %v, want %v", tc.kind, tc.db, got, tc.want)
		}
	}
}

// With the guard on (after 10 s of babble), a frame allocates nothing.
func TestBackgroundGuardDoesNotAllocate(t *testing.T) {
	bab := babbleOf(12*16000, 1)
	x := make([]int16, len(bab))
	for i, v := range bab {
		x[i] = int16(v * 1000)
	}
	d := NewSpectral(SpectralConfig{BackgroundDB: DefaultBackgroundDB})
	k := 0
	for ; k < 500; k++ {
		d.Speech(x[k*320:(k+1)*320], false)
	}
	if !d.bg.on {
		t.Fatal("10 s of babble did not turn the guard on")
	}
	if a := testing.AllocsPerRun(50, func() { d.Speech(x[k*320:(k+1)*320], false); k++ }); a != 0 {
		t.Errorf("%v allocs per frame with the guard on", a)
	}
}
