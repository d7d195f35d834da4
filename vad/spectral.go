package vad

import "math"

// The spectral detector: a statistical-model VAD in the manner of
// Sohn, Kim & Sung ("A statistical model-based voice activity detection",
// IEEE SPL 6(1), 1999), pure Go:
//
//   - STFT: 20 ms Hann window, 10 ms hop, 512-point FFT at 16 kHz (31.25 Hz
//     bins); bins from 94 Hz to 7.75 kHz are used; the window's mean is
//     removed first (DC never counts).
//
//   - Noise power per bin tracked by MCRA (Cohen & Berdugo, "Noise
//     estimation by minima controlled recursive averaging", IEEE SPL 9(1),
//     2002): a time- and frequency-smoothed periodogram, its minimum over a
//     sliding window of 1–2 s, a per-bin speech-presence probability from
//     the ratio of the two, and a recursive average of the periodogram
//     that stops where speech is present. The estimate does not depend on
//     the detector's own decisions, so a wrong decision does not corrupt
//     it; it follows a louder or quieter background within about 2 s.
//
//   - A-priori SNR per bin by the decision-directed rule (Ephraim & Malah
//     1984, α = 0.98) with a Wiener gain for the previous frame's speech
//     estimate; per-bin Gaussian log likelihood ratio
//     γξ/(1+ξ) − ln(1+ξ), averaged over the bins (the geometric mean of
//     the likelihood ratios).
//
//   - Hangover by Sohn's two-state hidden Markov model: the speech
//     probability of the previous hop, propagated through the transition
//     probabilities, is the prior of the next; a hop is speech when the
//     posterior exceeds 1/2 (the Bayes decision for equal costs).
//
//   - Optionally (SpectralConfig.HangoverMS, off by default) a short
//     decision hangover after speech bursts, as in the GSM full-rate VAD
//     (GSM 06.32, vad_hangover: a hangover only after a burst of speech
//     frames): after at least specBurstHops consecutive speech hops
//     (50 ms) the hops of the hangover are still speech. It recovers word
//     tails the HMM drops once they fall under the noise; a noise blip
//     shorter than the burst gets none, so it cannot grow into a run long
//     enough to start an utterance. With 200 ms (P.56's own hangover) the
//     decisions match ITU-T P.56 activity at 5 dB SNR. Off by default:
//     the capture pump's own hangover (600 ms) already covers tails, and
//     in the pump it lengthens a knock's run past the transient guard's
//     hold, so knocks start utterances again (measured in
//     docs/benchmarks.md "VAD on speech in noise").
//
//   - Optionally (SpectralConfig.BackgroundDB; on through New) a guard
//     against a speech-like background (background.go).
//
//   - Optionally (SpectralConfig.Voicing, KindVoiced; off in
//     KindSpectral) periodicity evidence: the power spectrum of the last
//     32 ms (Hann, 1024-point FFT, 94 Hz–4 kHz) minus twice the noise
//     estimate, inverse-transformed to an autocorrelation, divided by the
//     window's own (Boersma 1993) and by the noisy power; its peak over
//     lags of 2.5–14.25 ms (F0 70–400 Hz) is the hop's score. A stationary
//     hum is in the noise estimate and leaves no score. The score above its
//     running median plus a margin is added, weighted, to the hop's
//     evidence.
//
// A frame of the pump (10–60 ms) is speech when any of its hops is.
//
// The noise estimate is floored at white noise of MinFloorDBFS, so digital
// silence followed by a faint sound is not speech.
const (
	specHop  = 160 // 10 ms at 16 kHz
	specWin  = 320 // 20 ms
	specFFT  = 512
	specLo   = 3   // 93.75 Hz
	specHi   = 248 // 7.75 kHz
	specBins = specHi - specLo + 1

	mcraAlphaS    = 0.8  // periodogram smoothing in time
	mcraAlphaP    = 0.2  // speech-presence probability smoothing
	mcraAlphaD    = 0.95 // noise averaging (200 ms time constant at 10 ms hops)
	mcraDelta     = 5.0  // smoothed power over its minimum above this: speech present
	mcraWindow    = 100  // hops per minimum sub-window (the minimum spans 1–2 s)
	mcraInit      = 20   // hops of plain averaging at start (200 ms)
	ddAlpha       = 0.98 // decision-directed smoothing
	xiMin         = 0.003
	gammaMax      = 1000 // a posteriori SNR cap (30 dB): one bin cannot decide alone
	logitBound    = 30
	hmmA01        = 0.05 // P(silence → speech) per hop; stationary P(speech) = a01/(a01+a10) = 1/3 < 1/2
	hmmA10        = 0.1  // P(speech → silence) per hop
	specBurstHops = 5    // speech hops in a row before a hangover is earned (50 ms)
	specMaxHangMS = 200  // SpectralConfig.HangoverMS at most
	specHangHops  = 5    // hangover hops after such a burst (50 ms)
	specDefMinF   = -70.0

	// Voicing evidence (SpectralConfig.Voicing).
	pitchWin  = 512  // 32 ms: three periods of a 94 Hz voice
	pitchFFT  = 1024 // no circular overlap for lags up to pitchMaxLag
	pitchLo   = 6    // 94 Hz in pitchFFT bins (15.625 Hz)
	pitchHi   = 256  // 4 kHz: voiced harmonics above are weak
	pitchMin  = 40   // 2.5 ms lag: F0 400 Hz
	pitchMax  = 228  // 14.25 ms lag: F0 70 Hz
	pitchBeta = 2.0  // over-subtraction of the noise estimate
	// The running median of the score moves by this per hop (0.2 per
	// second at most).
	pitchMedStep = 0.002
)

// SpectralConfig tunes KindSpectral.
type SpectralConfig struct {
	// MinFloorDBFS: the noise estimate is never below white noise at this
	// level (default -70, as the energy detector's floor).
	MinFloorDBFS float64
	// HangoverMS: after a burst of at least 50 ms of speech, this much
	// more is still called speech (rounded up to 10 ms hops; 0..200,
	// default 0: none).
	HangoverMS int
	// Voicing, when positive, adds periodicity evidence: each hop gains
	// Voicing·max(0, v − m − VoicingMargin) nats of log likelihood, v
	// being the hop's periodicity score (Spectral.Voicing: the normalised
	// autocorrelation peak, lags 2.5–14.25 ms, of the last 32 ms after the
	// noise estimate is subtracted from its power spectrum) and m the
	// score's running median (the background's own periodicity). Off (0)
	// by default; KindVoiced sets 4 and 0.4 (docs/benchmarks.md "Voicing
	// evidence").
	Voicing       float64
	VoicingMargin float64
	// BackgroundDB, when positive, turns on the speech-like background
	// guard (babble, a television, a room of people talking; see
	// background.go): when even the quietest quarter of the last 4 s of
	// hops looks like speech and its level is steady, the background
	// itself is speech and the noise estimate cannot hold it; a hop is
	// then speech only when its level is BackgroundDB or more above the
	// background's (a talker nearer than the room). Off (0) in
	// SpectralConfig; vad.New sets DefaultBackgroundDB unless
	// Options.BackgroundDB says otherwise.
	BackgroundDB float64
	// FastOnset, when true, takes a word's first hop with a faster
	// decision-directed rule where the background is steady (onset.go):
	// words are called a hop or two sooner in stationary noise, and
	// nothing changes in babble. The onset is provisional (Provisional):
	// unconfirmed by the plain rule or the spectrum's shape within six
	// more hops, it is revoked, so a room whose noise rises by 2–3 dB at
	// once gets a few hops of provisional speech (it got up to 0.8 s of
	// speech before). Off in SpectralConfig; on in the capture pump's
	// default detector (Options.FastOnset; docs/benchmarks.md "The first
	// hops of a word", "A provisional onset step").
	FastOnset bool
}

// Spectral is the statistical-model detector (KindSpectral). It takes any
// frame length (hops of 10 ms are buffered across calls) and allocates
// nothing after NewSpectral.
type Spectral struct {
	fft     *fft
	win     []float64 // Hann window, specWin
	hist    []float64 // the last specWin samples
	pending int       // samples of the current hop already in hist's tail
	re, im  []float64

	pow, s, smin, stmp, pres, lambda, prevA []float64 // per bin (with one guard bin each side for pow)
	minCount                                int
	hops                                    int
	floor                                   float64
	adapt                                   bool

	seen int // samples seen, up to specWin

	logit    float64 // HMM log odds of speech after the last hop
	llr      float64 // mean log likelihood ratio of the last hop
	last     bool    // decision of the last completed hop (hangover included)
	burst    int     // consecutive hops the HMM called speech, up to the last
	hang     int     // hangover hops left
	hangHops int     // SpectralConfig.HangoverMS in hops

	// Voicing evidence (SpectralConfig.Voicing).
	voicing, margin      float64
	pfft                 *fft
	pwin, pre, pim, wacf []float64
	pscale               float64 // noise power per pitch bin over noise power per spectral bin
	voiced               float64 // the last hop's periodicity score
	vmed                 float64 // its running median

	// Speech-like background guard (SpectralConfig.BackgroundDB).
	bg *background

	// The onset step (SpectralConfig.FastOnset).
	onset *onsetGate
	// While a fast onset is provisional (prov hops left), the plain
	// rule's state runs beside it (its speech estimate shPrevA and log
	// odds shLogit); see onset.go.
	prov    int
	shPrevA []float64
	shLogit float64
	provSp  bool // the detector called speech while provisional
	revoked bool // an onset was revoked in the current Speech call
	onHold  int  // hops the step stays off after a revocation (then until γ̄ < onsetRearm)
}

// NewSpectral returns a spectral detector.
func NewSpectral(c SpectralConfig) *Spectral {
	if c.MinFloorDBFS == 0 {
		c.MinFloorDBFS = specDefMinF
	}
	d := &Spectral{
		fft:  newFFT(specFFT),
		win:  make([]float64, specWin),
		hist: make([]float64, pitchWin),
		re:   make([]float64, specFFT), im: make([]float64, specFFT),
		pow: make([]float64, specBins+2),
		s:   make([]float64, specBins), smin: make([]float64, specBins), stmp: make([]float64, specBins),
		pres: make([]float64, specBins), lambda: make([]float64, specBins), prevA: make([]float64, specBins),
		adapt:    true,
		hangHops: (min(max(c.HangoverMS, 0), specMaxHangMS) + 9) / 10,
	}
	var w2 float64
	for i := range d.win {
		d.win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*(float64(i)+0.5)/specWin)
		w2 += d.win[i] * d.win[i]
	}
	if c.Voicing > 0 {
		d.voicing, d.margin = c.Voicing, c.VoicingMargin
		d.pfft = newFFT(pitchFFT)
		d.pwin = make([]float64, pitchWin)
		d.pre, d.pim = make([]float64, pitchFFT), make([]float64, pitchFFT)
		d.wacf = make([]float64, pitchMax+1)
		var p2 float64
		for i := range d.pwin {
			d.pwin[i] = 0.5 - 0.5*math.Cos(2*math.Pi*(float64(i)+0.5)/pitchWin)
			p2 += d.pwin[i] * d.pwin[i]
		}
		d.pscale = p2 / w2
		for lag := range d.wacf {
			var r float64
			for i := 0; i+lag < pitchWin; i++ {
				r += d.pwin[i] * d.pwin[i+lag]
			}
			d.wacf[lag] = r / p2
		}
	}
	if c.BackgroundDB > 0 {
		d.bg = newBackground(c.BackgroundDB)
	}
	if c.FastOnset {
		d.onset = new(onsetGate)
		d.shPrevA = make([]float64, specBins)
	}
	sigma := 32768 * math.Pow(10, c.MinFloorDBFS/20)
	d.floor = sigma * sigma * w2
	d.logit = math.Log(hmmA01 / hmmA10) // the chain's stationary odds
	return d
}

// Kind implements Detector.
func (d *Spectral) Kind() string { return KindSpectral }

// Close implements Detector.
func (d *Spectral) Close() error { return nil }

// SetAdapt implements Adapter: with false the noise estimate is held (the
// frames still get decisions).
func (d *Spectral) SetAdapt(on bool) { d.adapt = on }

// BackgroundGuardOn implements BackgroundGuarded (false without the guard).
func (d *Spectral) BackgroundGuardOn() bool { return d.bg != nil && d.bg.on }

// Probability returns the speech probability after the last 10 ms hop.
func (d *Spectral) Probability() float64 { return 1 / (1 + math.Exp(-d.logit)) }

// LLR returns the mean log likelihood ratio of the last hop (0 before the
// first).
func (d *Spectral) LLR() float64 { return d.llr }

// Speech implements Detector: true when any 10 ms hop completed by frame
// was speech (for a frame shorter than a hop that completes none, the last
// hop's decision). active is not used: the hangover is the model's.
func (d *Spectral) Speech(frame []int16, _ bool) bool {
	if len(frame) == 0 {
		return false
	}
	any, done := false, false
	d.revoked = false
	for len(frame) > 0 {
		n := min(specHop-d.pending, len(frame))
		copy(d.hist, d.hist[n:])
		tail := d.hist[len(d.hist)-n:]
		for i, v := range frame[:n] {
			tail[i] = float64(v)
		}
		frame = frame[n:]
		d.pending += n
		d.seen = min(d.seen+n, specWin)
		if d.pending == specHop && d.seen < specWin {
			d.pending = 0 // the window is not full yet: no analysis
		}
		if d.pending == specHop {
			d.pending = 0
			d.hop()
			done = true
			any = any || d.last
		}
	}
	if !done {
		return d.last
	}
	return any
}

// Provisional implements vad.Provisional: the last frame's speech rests on
// a fast onset not yet confirmed, or one the frame revoked (onset.go).
// Always false without SpectralConfig.FastOnset.
func (d *Spectral) Provisional() bool { return d.prov > 0 && d.provSp || d.revoked }

// hop analyses the last specWin samples.
func (d *Spectral) hop() {
	hist := d.hist[pitchWin-specWin:]
	var mean float64
	for _, v := range hist {
		mean += v
	}
	mean /= specWin
	for i, v := range hist {
		d.re[i] = (v - mean) * d.win[i]
	}
	clear(d.re[specWin:])
	clear(d.im)
	d.fft.transform(d.re, d.im)
	for j := range d.pow {
		k := specLo - 1 + j
		d.pow[j] = d.re[k]*d.re[k] + d.im[k]*d.im[k]
	}
	pow := d.pow[1 : specBins+1]

	if d.hops == 0 {
		for j, p := range pow {
			sf := 0.25*d.pow[j] + 0.5*p + 0.25*d.pow[j+2]
			d.s[j], d.smin[j], d.stmp[j] = sf, sf, sf
			d.lambda[j] = max(p, d.floor)
		}
	}

	// Likelihood ratio against the noise estimate of the previous hops.
	alpha, fired, conc := ddAlpha, false, 1.0
	if d.onset != nil && d.hops >= mcraInit {
		alpha, fired, conc = d.onsetStart(pow) // onset.go
	}
	d.llr = d.evidence(pow, alpha, d.prevA)
	var shLLR float64
	if d.prov > 0 {
		shLLR = d.evidence(pow, ddAlpha, d.shPrevA)
	}
	var extra float64
	if d.voicing > 0 {
		d.voiced = d.periodicity()
		thr := d.vmed + d.margin
		extra = d.voicing * max(0, d.voiced-thr)
		if d.adapt {
			switch {
			case d.hops < mcraInit:
				d.vmed = max(d.vmed, d.voiced)
			case d.voiced > d.vmed:
				d.vmed += pitchMedStep
			default:
				d.vmed = max(d.vmed-pitchMedStep, 0)
			}
		}
	}
	d.llr += extra
	shLLR += extra
	if d.hops < mcraInit {
		d.llr = 0 // still learning the noise: no evidence either way
	}
	if d.bg != nil {
		var level float64
		for _, p := range pow {
			level += p
		}
		if d.bg.gate(level, d.llr, d.adapt && d.hops >= mcraInit) {
			d.llr = min(d.llr, 0) // under the background: no evidence of speech
			shLLR = min(shLLR, 0)
		}
	}

	// Two-state HMM: prior from the last posterior, posterior log odds.
	d.logit = hmmStep(d.logit, d.llr)
	d.last = d.logit > 0
	if d.prov > 0 {
		d.onsetSettle(fired, conc, shLLR) // onset.go
	}
	switch {
	case d.last:
		d.burst = min(d.burst+1, specBurstHops)
		if d.burst >= specBurstHops {
			d.hang = d.hangHops
		}
	case d.hang > 0:
		d.burst = 0
		d.hang--
		d.last = true
	default:
		d.burst = 0
	}

	if d.adapt {
		d.track(pow)
	}
	d.hops++
}

// evidence returns the mean log likelihood ratio of pow against the noise
// estimate, the a-priori SNR by the decision-directed rule with alpha from
// prevA (the previous hop's speech estimate, updated).
func (d *Spectral) evidence(pow []float64, alpha float64, prevA []float64) float64 {
	var sum float64
	for j, p := range pow {
		lam := d.lambda[j]
		gamma := min(p/lam, gammaMax)
		xi := alpha*prevA[j]/lam + (1-alpha)*max(gamma-1, 0)
		xi = max(xi, xiMin)
		r := xi / (1 + xi)
		sum += gamma*r - math.Log1p(xi)
		prevA[j] = r * r * p
	}
	return sum / specBins
}

// hmmStep propagates the speech log odds through the two-state chain and
// adds a hop's evidence.
func hmmStep(logit, llr float64) float64 {
	post := 1 / (1 + math.Exp(-logit))
	prior := hmmA01*(1-post) + (1-hmmA10)*post
	return min(max(math.Log(prior/(1-prior))+llr, -logitBound), logitBound)
}

// track updates the MCRA noise estimate with this hop's periodogram.
func (d *Spectral) track(pow []float64) {
	d.minCount++
	reset := d.minCount >= mcraWindow
	if reset {
		d.minCount = 0
	}
	for j, p := range pow {
		sf := 0.25*d.pow[j] + 0.5*p + 0.25*d.pow[j+2]
		s := mcraAlphaS*d.s[j] + (1-mcraAlphaS)*sf
		d.s[j] = s
		d.smin[j] = min(d.smin[j], s)
		d.stmp[j] = min(d.stmp[j], s)
		if reset {
			d.smin[j] = min(d.stmp[j], s)
			d.stmp[j] = s
		}
		ind := 0.0
		if s > mcraDelta*d.smin[j] {
			ind = 1
		}
		d.pres[j] = mcraAlphaP*d.pres[j] + (1-mcraAlphaP)*ind
		a := mcraAlphaD + (1-mcraAlphaD)*d.pres[j]
		if d.hops < mcraInit {
			a = float64(d.hops) / float64(d.hops+1) // plain mean of the first hops
		}
		d.lambda[j] = max(a*d.lambda[j]+(1-a)*p, d.floor)
	}
}

// Voicing returns the periodicity score of the last hop (0 without
// SpectralConfig.Voicing).
func (d *Spectral) Voicing() float64 { return d.voiced }

// periodicity returns the peak of the normalised autocorrelation, over lags
// of 2.5–14 ms, of the last 32 ms after the noise estimate is subtracted
// from its power spectrum (the autocorrelation is the inverse transform of
// the clean power; the taper of the window's own autocorrelation is
// divided out, as Boersma 1993 does).
func (d *Spectral) periodicity() float64 {
	var mean float64
	for _, v := range d.hist {
		mean += v
	}
	mean /= pitchWin
	for i, v := range d.hist {
		d.pre[i] = (v - mean) * d.pwin[i]
	}
	clear(d.pre[pitchWin:])
	clear(d.pim)
	d.pfft.transform(d.pre, d.pim)
	var total float64
	for k := range pitchFFT/2 + 1 {
		var c float64
		if k >= pitchLo && k <= pitchHi {
			p := d.pre[k]*d.pre[k] + d.pim[k]*d.pim[k]
			// The noise estimate at this frequency (spectral bins are
			// twice as wide: interpolate between the two nearest).
			x := float64(k)/2 - specLo
			j := min(max(int(x), 0), specBins-2)
			fr := min(max(x-float64(j), 0), 1)
			lam := ((1-fr)*d.lambda[j] + fr*d.lambda[j+1]) * d.pscale
			c = max(p-pitchBeta*lam, 0)
			total += p
		}
		d.pre[k] = c
		if k > 0 && k < pitchFFT/2 {
			d.pre[pitchFFT-k] = c
		}
	}
	clear(d.pim)
	d.pfft.transform(d.pre, d.pim) // real and even: the autocorrelation
	r0 := 2 * total                // the noisy power's autocorrelation at lag 0 (both halves of the spectrum)
	if r0 <= 0 {
		return 0
	}
	best := 0.0
	for lag := pitchMin; lag <= pitchMax; lag++ {
		best = max(best, d.pre[lag]/(r0*d.wacf[lag]))
	}
	return min(best, 1)
}
