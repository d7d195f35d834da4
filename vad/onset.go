package vad

import (
	"math"
	"sort"
)

// The onset step (SpectralConfig.FastOnset; Options.FastOnset; on in the
// capture pump's default detector, auto, since it became provisional:
// see the noise step below).
//
// The decision-directed rule smooths the a-priori SNR with α = 0.98, so
// after a pause ξ climbs from its floor over three to four 10 ms hops
// (the rule's known onset lag, Cappé 1994): the first hops of a word are
// called late, or never when the word is short and faint. A faster rule
// everywhere lets fluctuating backgrounds in (babble: α 0.9 called 57 %
// of its frames speech, docs/benchmarks.md "This round"). So the fast
// rule is used for one hop only, and only where the noise estimate
// explains the background:
//
//   - an onset: the hop's mean a-posteriori SNR over the bins (γ̄, 1 on
//     average in noise the estimate follows) is above onsetGamma, and
//     the previous hop was called silence. For that hop ξ is smoothed with
//     onsetAlpha instead (mostly the hop's own γ − 1); the rule's memory
//     (the previous hop's speech estimate) carries the rest.
//   - a steady background: the 10th percentile of γ̄ over the last 3 s
//     lies within [onsetSteadyLo, onsetSteadyHi]. In stationary noise
//     (white, pink, motor hum, fans) the noise hops' γ̄ is a mean over
//     about 120 independent bins and stays near its expectation (0.85–0.9
//     here: MCRA's estimate sits a little above the periodogram's typical
//     hop); a talker's hops only add to the upper part. In babble the
//     estimate averages over the talkers' swings, so its troughs read
//     0.4–0.6 and the step is off: the detector is the plain one. (Under
//     a babble with pitch the percentile wanders over 0.6–1.7 and the
//     gate is open part of the time; there the background guard holds
//     every hop's evidence anyway.)
//
// The gate judges once the whole window has been learnt, so a pump gated
// from its first frame (the robot speaking at start-up) does not judge
// the background from the first words it hears.
//
// Measured in docs/benchmarks.md "The first hops of a word": in pink and
// motor noise at 5 dB, 0.93–0.96 of the speech frames found (was
// 0.87–0.93), 20 ms sooner; babble, knocks, impulses unchanged. But a room
// whose noise rises by 2–3 dB at once looked like a word's first hop (the
// window still holds the old level, and a broadband rise to γ̄ ≈ 2 is what
// the step looks for), and once called speech the run went on for up to
// 0.8 s, which the plain rule ignores. So a fast onset is provisional:
//
//   - from the hop it fires, the plain rule's state (its speech estimate
//     and log odds, without the faster step) runs beside the detector's;
//   - the onset is confirmed when, within onsetConfirmHops, the plain
//     rule calls the hop speech too, or the hop's excess has a shape: the
//     geometric over the arithmetic mean of the bins' γ under onsetConc
//     (a word's formants, harmonics or a fricative's band; background
//     noise shaped like the estimate gives ≈ 0.56 at any level, as each
//     bin's periodogram is exponentially distributed around it);
//   - otherwise, if the detector called any of those hops speech, the
//     plain rule's state replaces the detector's (the run ends there,
//     seven hops at most) and the step stays off for onsetHoldHops and
//     then until γ̄ falls under onsetRearm (the noise estimate has
//     followed the new level). Onsets that fired in noise alone and
//     never became speech end quietly, without the rest (about one a
//     second in pink noise).
//   - Provisional (vad.Provisional) reports, per frame, speech that rests
//     on an onset not yet confirmed (or revoked in the frame): the frames
//     are still called speech, but the capture pump starts no utterance
//     on them until the onset is confirmed.
//
// A +2 or +3 dB step is then 2–4 frames of provisional speech instead of
// 9–42 frames of speech (TestSpectralIgnoresASmallNoiseStep), and in the
// pump rooms whose noise steps every few seconds start exactly as many
// utterances as with the plain rule (capture.TestNoiseStepStartsNoUtterance;
// docs/benchmarks.md "A provisional onset step"), with the recall gain
// kept.
const (
	onsetGamma       = 1.3
	onsetAlpha       = 0.5
	onsetHops        = 300       // 3 s of 10 ms hops
	onsetMinHops     = onsetHops // the whole window learnt before the first judgement
	onsetSteadyLo    = 0.8
	onsetSteadyHi    = 1.2
	onsetQuantileN   = 10   // the 10th percentile: sorted[n/onsetQuantileN]
	onsetConfirmHops = 6    // hops after the first that a fast onset waits for confirmation
	onsetConc        = 0.45 // geometric/arithmetic mean of γ under this: the excess has a shape
	onsetHoldHops    = 100  // 1 s without the step after a revoked onset
	onsetRearm       = 1.1  // and then until γ̄ is under this
)

// onsetGate keeps the last onsetHops values of γ̄ and tells whether the
// background is steady. Not safe for concurrent use (the detector's).
type onsetGate struct {
	ring   [onsetHops]float64
	sorted [onsetHops]float64 // the ring's values in ascending order
	n      int
	next   int
}

// push adds one hop's γ̄, dropping the oldest once the window is full.
// O(onsetHops), no allocation.
func (g *onsetGate) push(v float64) {
	if g.n == onsetHops {
		old := g.ring[g.next]
		i := sort.SearchFloat64s(g.sorted[:g.n], old)
		copy(g.sorted[i:g.n-1], g.sorted[i+1:g.n])
		g.n--
	}
	g.ring[g.next] = v
	g.next = (g.next + 1) % onsetHops
	i := sort.SearchFloat64s(g.sorted[:g.n], v)
	copy(g.sorted[i+1:g.n+1], g.sorted[i:g.n])
	g.sorted[i] = v
	g.n++
}

// low returns the window's 10th percentile (0 when empty).
func (g *onsetGate) low() float64 {
	if g.n == 0 {
		return 0
	}
	return g.sorted[g.n/onsetQuantileN]
}

// steady reports whether the background is one the noise estimate
// explains (see above).
func (g *onsetGate) steady() bool {
	if g.n < onsetMinHops {
		return false
	}
	q := g.low()
	return q >= onsetSteadyLo && q <= onsetSteadyHi
}

// onsetStart runs the onset step before a hop's evidence (Spectral.hop,
// once the noise estimate has been learnt): it returns the
// decision-directed smoothing for the hop, whether a provisional onset
// fired on it, and the shape of the hop's excess while an onset is
// provisional (1 otherwise).
func (d *Spectral) onsetStart(pow []float64) (alpha float64, fired bool, conc float64) {
	alpha, conc = ddAlpha, 1
	var mean float64
	for j, p := range pow {
		mean += min(p/d.lambda[j], gammaMax)
	}
	mean /= specBins
	if d.adapt {
		d.onset.push(mean)
	}
	if d.onHold > 1 {
		d.onHold--
	} else if d.onHold == 1 && mean < onsetRearm {
		d.onHold = 0
	}
	if !d.last && d.onHold == 0 && mean > onsetGamma && d.onset.steady() {
		alpha = onsetAlpha
		if d.prov == 0 {
			fired = true
			d.provSp = false
			d.prov = onsetConfirmHops
			copy(d.shPrevA, d.prevA)
			d.shLogit = d.logit
		}
	}
	if d.prov > 0 {
		var logs float64
		for j, p := range pow {
			logs += math.Log(max(min(p/d.lambda[j], gammaMax), 1e-3))
		}
		conc = math.Exp(logs/specBins) / mean // ≈ 0.56 for noise shaped like the estimate, at any level
	}
	return alpha, fired, conc
}

// onsetSettle confirms, waits for or revokes the provisional onset after
// the hop's HMM update: shLLR is the hop's evidence under the plain rule,
// conc its excess's shape, fired whether the onset fired on this hop.
func (d *Spectral) onsetSettle(fired bool, conc, shLLR float64) {
	d.provSp = d.provSp || d.last
	d.shLogit = hmmStep(d.shLogit, shLLR)
	switch {
	case d.shLogit > 0 || conc < onsetConc:
		d.prov = 0 // confirmed: the plain rule calls it too, or the excess has a shape
	case !fired:
		d.prov--
		if d.prov == 0 && d.provSp { // not confirmed: the plain rule's state is the detector's
			copy(d.prevA, d.shPrevA)
			d.logit = d.shLogit
			d.last = false
			d.revoked = true
			d.onHold = onsetHoldHops
		}
	}
}
