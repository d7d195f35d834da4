package vad

import "math"

// The speech-like background guard (SpectralConfig.BackgroundDB).
//
// The spectral detector's model is speech against a noise whose power per
// band changes slowly (MCRA follows its minimum). Babble — several people
// talking at once, a television, a café — is speech itself: its bands
// swing by tens of dB within a second, the minimum tracker sits far under
// it, and every hop looks like speech (measured: 98 % of the frames of an
// eight-talker babble, at every level from 20 dB under the user to 0 dB;
// docs/benchmarks.md "Voicing evidence, and a babble with pitch"). What
// still tells the user from such a background is level: the user is nearer
// than the room.
//
// The guard keeps the last 4 s of hops: their broadband level (0.5 dB
// steps) and whether their likelihood ratio alone was above bgLLR. It
// judges the quietest quarter of the window:
//
//   - a single talker pauses, and the hops of his pauses are the
//     background's: noise, with a likelihood ratio near zero or below. In
//     babble even the quietest quarter is speech, with a positive ratio:
//     the guard turns on when at least bgOnFrac of the quietest quarter is
//     above bgLLR (off again under bgOffFrac: a loud talker lifts the
//     noise estimate for a while after he stops, and the babble then
//     looks less like speech);
//   - and only when the quiet part is also narrow: babble's level is steady
//     (its 5th to 25th percentile within about 4 dB), a talker's pauses are
//     not (silence, breath, faint consonants: 20 dB and more). Above
//     bgSpread dB (bgSpread + bgSpreadHyst while on) the guard is off.
//
// While on, a hop whose level is less than the margin above the window's
// 25th percentile (the background's typical level, kept below the user's
// voice while he speaks for up to three quarters of the window) gets no
// evidence of speech; a nearer talker's louder hops keep theirs. The
// constants were chosen on development material and measured on held-out
// phrases, voices and babble (docs/benchmarks.md "A speech-like
// background"); stationary noises (white, pink, motor) and a synthetic
// babble without pitch never turned it on, nor did monologues of 14–60 s
// without a pause, alone or in noise.
const (
	bgHops       = 400 // 4 s of 10 ms hops
	bgMinHops    = 300 // 3 s of hops learnt before the guard may judge: a talker who speaks at once is not a background
	bgStepDB     = 0.5
	bgLevels     = 400  // 0..200 dB of raw band power in 0.5 dB steps
	bgQuiet      = 0.25 // the quietest quarter is judged
	bgLLR        = 0.02 // a hop's mean log likelihood ratio above this counts as speech-like
	bgOnFrac     = 0.75
	bgOffFrac    = 0.3
	bgSpread     = 5.0 // dB from the 5th to the 25th percentile level, at most
	bgSpreadHyst = 3.0
)

// DefaultBackgroundDB is the guard's margin for KindSpectral and KindVoiced
// unless Options.BackgroundDB says otherwise (docs/benchmarks.md "A
// speech-like background").
const DefaultBackgroundDB = 10.0

// MaxBackgroundDB is the largest margin Options.BackgroundDB takes.
const MaxBackgroundDB = 40.0

// background is the guard's state; it allocates nothing after
// newBackground. It is used by its detector's goroutine.
type background struct {
	margin float64
	lvl    []uint16 // ring of level steps
	spk    []bool   // ring: the hop's likelihood ratio was above bgLLR
	next   int
	n      int
	hist   [bgLevels]int32 // hops per level step in the window
	hspk   [bgLevels]int32 // of them above bgLLR
	on     bool
	ref    float64 // the window's 25th percentile level (dB) at the last judgement: the background's
}

func newBackground(marginDB float64) *background {
	return &background{
		margin: marginDB,
		lvl:    make([]uint16, bgHops),
		spk:    make([]bool, bgHops),
	}
}

// gate records a hop of band power level (arbitrary units, the same for
// every hop) with likelihood ratio llr when learn, and tells whether the
// hop is to get no evidence of speech.
func (b *background) gate(level, llr float64, learn bool) bool {
	step := 0
	if level > 1 {
		step = min(int(10*math.Log10(level)/bgStepDB), bgLevels-1)
	}
	if learn {
		if b.n == bgHops {
			old := b.lvl[b.next]
			b.hist[old]--
			if b.spk[b.next] {
				b.hspk[old]--
			}
		} else {
			b.n++
		}
		sp := llr > bgLLR
		b.lvl[b.next], b.spk[b.next] = uint16(step), sp
		b.hist[step]++
		if sp {
			b.hspk[step]++
		}
		b.next = (b.next + 1) % bgHops
		b.judge()
	}
	return b.on && float64(step)*bgStepDB < b.ref+b.margin
}

// judge turns the guard on or off from the quietest quarter of the window.
func (b *background) judge() {
	if b.n < bgMinHops {
		b.on = false
		return
	}
	lim := bgSpread
	if b.on {
		lim += bgSpreadHyst
	}
	q05, q25, frac := b.quiet()
	b.ref = q25
	if q25-q05 > lim {
		b.on = false
		return
	}
	switch {
	case frac >= bgOnFrac:
		b.on = true
	case frac < bgOffFrac:
		b.on = false
	}
}

// quiet returns, in one pass over the window's levels, its 5th and 25th
// percentile levels (dB) and the share of its quietest quarter whose
// likelihood ratio was above bgLLR (hops of the level step at the boundary
// counted in proportion).
func (b *background) quiet() (q05, q25, frac float64) {
	k05, k25 := int32(0.05*float64(b.n)), int32(bgQuiet*float64(b.n))
	quiet := int32(math.Ceil(bgQuiet * float64(b.n)))
	var cum, seen, spoken int32
	q05, q25 = -1, -1
	for i, h := range b.hist {
		if h == 0 {
			continue
		}
		cum += h
		if q05 < 0 && cum > k05 {
			q05 = float64(i) * bgStepDB
		}
		if q25 < 0 && cum > k25 {
			q25 = float64(i) * bgStepDB
		}
		if seen < quiet {
			take := min(h, quiet-seen)
			seen += take
			spoken += int32(int64(b.hspk[i]) * int64(take) / int64(h))
		}
		if q25 >= 0 && seen >= quiet {
			break
		}
	}
	return q05, q25, float64(spoken) / float64(quiet)
}
