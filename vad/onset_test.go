package vad

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The gate's 10th percentile is the sorted window's, while the window
// fills and after it slides, with repeated values.
func TestOnsetGateMatchesSortedWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var g onsetGate
	var all []float64
	for i := range 3 * onsetHops {
		v := 0.5 + rng.Float64()
		if i%7 == 0 {
			v = 1 // repeats
		}
		g.push(v)
		all = append(all, v)
		win := slices.Clone(all[max(0, len(all)-onsetHops):])
		slices.Sort(win)
		if got, want := g.low(), win[len(win)/onsetQuantileN]; got != want {
			t.Fatalf("push %d: low %v, want %v", i, got, want)
		}
		if !slices.Equal(g.sorted[:g.n], win) {
			t.Fatalf("push %d: sorted window differs", i)
		}
		wantSteady := len(win) >= onsetMinHops && win[len(win)/onsetQuantileN] >= onsetSteadyLo && win[len(win)/onsetQuantileN] <= onsetSteadyHi
		if g.steady() != wantSteady {
			t.Fatalf("push %d: steady %v, want %v", i, g.steady(), wantSteady)
		}
	}
	var empty onsetGate
	if empty.low() != 0 || empty.steady() {
		t.Error("an empty gate judged")
	}
	if a := testing.AllocsPerRun(100, func() { g.push(1.1) }); a != 0 {
		t.Errorf("push: %v allocs", a)
	}
}

// onsetDelays runs d over mic in 20 ms frames and returns, for every
// syllable (a run of truth 1 frames after a frame that is not), the frames
// from its first frame to the first one called speech (-1: never within
// the run), and the false-positive rate on truth 0 frames after the first
// 2 s.
func onsetDelays(d Detector, mic []int16, truth []int) (delays []int, fpr float64) {
	calls := frameCalls(d, mic)
	var fp, tn int
	for k := 100; k < len(truth); k++ {
		if truth[k] == 0 {
			if calls[k] {
				fp++
			} else {
				tn++
			}
		}
		if truth[k] != 1 || truth[k-1] == 1 {
			continue
		}
		delay := -1
		for j := k; j < len(truth) && truth[j] == 1; j++ {
			if calls[j] {
				delay = j - k
				break
			}
		}
		delays = append(delays, delay)
	}
	return delays, float64(fp) / float64(max(fp+tn, 1))
}

// In pink noise at 5 dB SNR the detector with the onset step calls
// syllables sooner than the plain one (fewer frames from a syllable's
// first frame to its first call, summed over all syllables, none later),
// with the same bound on false positives; at 20 dB nothing gets worse.
// Over the generated syllables of TestSpectralFindsSyllablesInPinkNoise.
func TestFastOnsetCallsSyllablesSooner(t *testing.T) {
	for _, snr := range []float64{5, 20} {
		var sumFast, sumPlain, sooner int
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, 3))
			f0 := 100 + 150*rng.Float64()
			lead := make([]float64, 3*16000)
			v, truth := syllables(8*16000, f0, 180+100*rng.Float64(), 250+300*rng.Float64(), rng)
			voice := append(lead, v...)
			truth = append(make([]int, 150), truth...)
			mic := mix(voice, truth, -25, snr, seed)
			fast, ffpr := onsetDelays(NewSpectral(SpectralConfig{FastOnset: true}), mic, truth)
			plain, pfpr := onsetDelays(NewSpectral(SpectralConfig{}), mic, truth)
			miss := len(truth) // a syllable never called counts as its whole length
			for i := range fast {
				f, p := fast[i], plain[i]
				if f < 0 {
					f = miss
				}
				if p < 0 {
					p = miss
				}
				sumFast += f
				sumPlain += p
				if f < p {
					sooner++
				}
				if f > p {
					t.Errorf("SNR %v dB seed %d syllable %d: called after %d frames with the onset step, %d without", snr, seed, i, fast[i], plain[i])
				}
			}
			t.Logf("SNR %v dB seed %d: onset frames %v (plain %v), false positives %.3f (plain %.3f)", snr, seed, fast, plain, ffpr, pfpr)
			if ffpr > 0.03 {
				t.Errorf("SNR %v dB seed %d: false positives %.1f %% with the onset step (want <= 3 %%)", snr, seed, 100*ffpr)
			}
		}
		t.Logf("SNR %v dB: %d frames to the first call with the onset step, %d without; %d syllables sooner", snr, sumFast, sumPlain, sooner)
		if snr == 5 && (sumFast >= sumPlain || sooner == 0) {
			t.Errorf("SNR 5 dB: %d frames to the first calls with the onset step, %d without: not sooner", sumFast, sumPlain)
		}
	}
}

// fluctuating returns n samples of pink noise at unit RMS whose level
// swings as six talkers' syllables would (each a random 100–400 ms burst
// every 150–600 ms, summed): a babble without pitch, like room's.
func fluctuating(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	env := make([]float64, n)
	for range 6 {
		for at := rng.IntN(8000); at < n; {
			syl := (100 + rng.IntN(300)) * 16
			a := 0.3 + rng.Float64()
			for i := 0; i < syl && at+i < n; i++ {
				env[at+i] += a * math.Sin(math.Pi*float64(i)/float64(syl))
			}
			at += syl + (50+rng.IntN(200))*16
		}
	}
	p := pinkGen{rng: rand.New(rand.NewPCG(seed, 9))}
	out := make([]float64, n)
	var e float64
	for i := range out {
		out[i] = (0.05 + env[i]) * p.next()
		e += out[i] * out[i]
	}
	g := 1 / math.Sqrt(e/float64(n))
	for i := range out {
		out[i] *= g
	}
	return out
}

// In a fluctuating background the gate is mostly shut and the decisions
// are nearly the plain detector's: in a babble without pitch it opens now
// and then (stretches of 0.4–1.6 s in 12 s, where the babble happens to
// hold a steady level for a while), and under the pitched babble the
// background guard holds the evidence anyway; in steady pink noise it is
// open.
func TestFastOnsetGateMostlyShutInBabble(t *testing.T) {
	const n = 12 * 16000
	scale := func(x []float64, dbfs float64) []int16 {
		g := 32768 * math.Pow(10, dbfs/20)
		out := make([]int16, len(x))
		for i, v := range x {
			out[i] = int16(max(min(v*g, 32767), -32768))
		}
		return out
	}
	pink := make([]float64, n)
	p := pinkGen{rng: rand.New(rand.NewPCG(3, 3))}
	for i := range pink {
		p.next()
		pink[i] = p.next()
	}
	for _, tc := range []struct {
		name      string
		x         []float64
		minOpen   float64 // share of judged frames with the gate open, at least
		maxOpen   float64 // and at most
		maxDiffer float64 // share of frames whose decision differs from the plain detector's, at most
	}{
		{"babble without pitch", fluctuating(n, 1), 0, 0.2, 0.03},
		{"babble without pitch, seed 2", fluctuating(n, 2), 0, 0.2, 0.03},
		{"pitched babble (background guard on)", babbleOf(n, 4), 0, 1, 0},
		{"pink noise", pink, 0.9, 1, 0.01},
	} {
		mic := scale(tc.x, -30)
		fast := NewSpectral(SpectralConfig{FastOnset: true, BackgroundDB: DefaultBackgroundDB})
		plain := NewSpectral(SpectralConfig{BackgroundDB: DefaultBackgroundDB})
		var open, judged, differ int
		frames := n / 320
		for k := range frames {
			f := fast.Speech(mic[k*320:(k+1)*320], false)
			if plain.Speech(mic[k*320:(k+1)*320], false) != f {
				differ++
			}
			if fast.onset.n >= onsetMinHops {
				judged++
				if fast.onset.steady() {
					open++
				}
			}
		}
		t.Logf("%s: gate open in %d of %d judged frames (10th percentile of the mean SNR at the end %.2f), %d of %d decisions differ", tc.name, open, judged, fast.onset.low(), differ, frames)
		if judged == 0 {
			t.Fatalf("%s: the gate never judged", tc.name)
		}
		if o := float64(open) / float64(judged); o < tc.minOpen || o > tc.maxOpen {
			t.Errorf("%s: gate open in %.0f %% of the judged frames, want %.0f–%.0f %%", tc.name, 100*o, 100*tc.minOpen, 100*tc.maxOpen)
		}
		if d := float64(differ) / float64(frames); d > tc.maxDiffer {
			t.Errorf("%s: %.1f %% of the decisions differ from the plain detector's, want at most %.0f %%", tc.name, 100*d, 100*tc.maxDiffer)
		}
	}
}

// A room whose noise rises by 2–3 dB at once (a fan speeding up) is no
// speech to the default detector; the onset step calls it speech for up
// to a second (the gate still holds the old level as the background, and
// a broadband rise of γ̄ to about 2 looks like a word's first hop), which
// is why the step is off by default (Options.FastOnset).
func TestSpectralIgnoresASmallNoiseStep(t *testing.T) {
	for _, jump := range []float64{2, 3} {
		for seed := uint64(5); seed <= 7; seed++ {
			n := 12 * 16000
			p := pinkGen{rng: rand.New(rand.NewPCG(seed, 5))}
			mic := make([]int16, n)
			for i := range mic {
				lvl := -50.0
				if i >= 6*16000 {
					lvl += jump
				}
				mic[i] = int16(p.next() * 32768 * math.Pow(10, lvl/20))
			}
			count := func(fast bool) (n, run, sure int) {
				d, err := New(Options{Kind: KindSpectral, FastOnset: fast})
				if err != nil {
					t.Fatal(err)
				}
				cur := 0
				for k := range len(mic) / 320 {
					s := d.Speech(mic[k*320:(k+1)*320], false)
					if k >= 100 && s {
						n++
						cur++
						run = max(run, cur)
						if !d.(Provisional).Provisional() {
							sure++ // speech the pump could start an utterance on
						}
					} else {
						cur = 0
					}
				}
				return n, run, sure
			}
			plain, _, _ := count(false)
			fast, run, sure := count(true)
			t.Logf("+%v dB, seed %d: %d frames called speech (with the onset step %d, longest run %d, %d not provisional)", jump, seed, plain, fast, run, sure)
			if plain != 0 {
				t.Errorf("+%v dB, seed %d: the default detector called %d frames of a noise step speech", jump, seed, plain)
			}
			// The onset step is provisional: unconfirmed, it ends within
			// seven hops, and every frame of it says so, so that the pump
			// starts nothing on it (before: 9-15 frames at +2 dB, 36-42
			// at +3 dB, in runs of 5-8).
			if fast > 5 || run > 4 || sure > 0 {
				t.Errorf("+%v dB, seed %d: with the onset step %d frames speech, a run of %d, %d of them not provisional (want at most 5, runs of at most 4, none)", jump, seed, fast, run, sure)
			}
		}
	}
}
