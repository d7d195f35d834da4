package aec

import "math"

// DelayEstimator finds the echo delay: the lag at which the far-end
// reference best explains the mic, by normalised cross-correlation of
// 2 ms amplitude envelopes over the last two seconds. It needs far-end
// activity and an echo that stands out of the near-end; otherwise it keeps
// its previous estimate. One goroutine; no allocation after construction.
type DelayEstimator struct {
	maxLag       int // in envelope steps
	far, mic     []float32
	n            int // envelope samples so far
	accF, accM   float32
	acc          int
	every, since int
	corr         []float32 // scratch: the correlation at each lag
	ambiguous    int       // windows with a second peak (delayUnique), for tests
	est          int       // samples
	conf         float32
	have         bool
	pending      int
	pendingCount int
	// NearEnd's hold: no estimate is taken while n < nearUntil, unless the
	// hold began (nearFrom) more than maxNearHold ago.
	nearFrom, nearUntil int
}

const (
	envStep   = 32 // 2 ms at 16 kHz
	envWindow = 1000
	minWindow = 250 // 0.5 s: the first estimates come from what history there is
	// growSlack (samples): see update.
	growSlack = 40 * Rate / 1000
	// delayUnique, envLobe: a window whose correlation has another local
	// maximum envLobe steps (50 ms) or more from the highest, reaching
	// delayUnique of it, gives no estimate. Measured (duplex-bench, pink
	// noise 10 dB, 6 replies): with espeak-ng replies 2 of 119 windows
	// had such a peak (a speech envelope's own shoulders lie 20-30 ms from
	// the peak, at up to 0.9 of it: hence 50 ms); with a plucked melody, a
	// note every 300 ms, 224 of 266, one note period off; a square-wave
	// jingle (150 ms notes) 94 of 99. Without the test the melody moved
	// the estimate 41 times and the robot interrupted itself 27 times
	// in 10 replies; the jingle, 39 and 35 in 20.
	delayUnique = 0.8
	envLobe     = 25
)

// secondPeak returns the highest local maximum of corr lobe or more
// indices from best (-2: none).
func secondPeak[T float32 | float64](corr []T, best, lobe int) T {
	sec := T(-2)
	for i := 1; i < len(corr)-1; i++ {
		if i > best-lobe && i < best+lobe {
			continue
		}
		if c := corr[i]; c > sec && c >= corr[i-1] && c >= corr[i+1] {
			sec = c
		}
	}
	return sec
}

// NewDelayEstimator returns an estimator for delays of 0..maxMS.
func NewDelayEstimator(maxMS int) *DelayEstimator {
	ml := maxMS * Rate / 1000 / envStep
	return &DelayEstimator{maxLag: ml, far: make([]float32, envWindow+ml), mic: make([]float32, envWindow), corr: make([]float32, ml+1), every: 250}
}

// Push adds aligned far and mic samples (same length).
func (d *DelayEstimator) Push(far, mic []int16) {
	for i := range far {
		d.accF += float32(math.Abs(float64(far[i])))
		d.accM += float32(math.Abs(float64(mic[i])))
		d.acc++
		if d.acc == envStep {
			copy(d.far, d.far[1:])
			d.far[len(d.far)-1] = d.accF / envStep
			copy(d.mic, d.mic[1:])
			d.mic[len(d.mic)-1] = d.accM / envStep
			d.accF, d.accM, d.acc = 0, 0, 0
			d.n++
			d.since++
			every := d.every
			if !d.have {
				every = 50
			}
			if d.n >= d.maxLag+minWindow && d.since >= every {
				d.since = 0
				d.update(min(d.n-d.maxLag, envWindow))
			}
		}
	}
}

// NearEnd marks the samples pushed last as holding the near end's own
// sound (the user talking over the far end): no estimate is taken while
// they are in the window. Speech correlates with speech by chance, and
// a window holding the user beside the robot's voice gave 0.4 and more at
// a wrong lag: in `make run` the estimate jumped from 34 to 226 ms a
// second after a barge-in, and the replies after it went to the canceller
// 190 ms late (the robot's voice passed as the user, 2-3 replies in a
// row interrupted 100-360 ms in).
//
// The hold gives up maxNearHold after it began if it never lapsed: an echo
// the canceller no longer cancels because the delay really changed passes
// as the user too, and only a new estimate ends that. (A user who talks
// over the robot stops it within a second or two.)
func (d *DelayEstimator) NearEnd() {
	if d.n >= d.nearUntil {
		d.nearFrom = d.n
	}
	d.nearUntil = d.n + envWindow
}

// maxNearHold is the longest NearEnd holds the estimate, in envelope steps
// (3 s).
const maxNearHold = 3 * Rate / envStep

func (d *DelayEstimator) update(w int) {
	if d.have && d.n < d.nearUntil && d.n-d.nearFrom < maxNearHold {
		return
	}
	mic := d.mic[len(d.mic)-w:]
	mm, me := meanEnergy(mic)
	if me == 0 {
		return
	}
	best, bestLag := float32(-2), 0
	corr := d.corr
	for lag := 0; lag <= d.maxLag; lag++ {
		corr[lag] = -2
		// mic[i] pairs with far[i + maxLag - lag] (far leads by lag).
		f := d.far[len(d.far)-lag-w : len(d.far)-lag]
		fm, fe := meanEnergy(f)
		if fe == 0 {
			continue
		}
		var c float32
		for i, v := range mic {
			c += (v - mm) * (f[i] - fm)
		}
		c /= float32(math.Sqrt(float64(fe * me)))
		corr[lag] = c
		if c > best {
			best, bestLag = c, lag
		}
	}
	d.conf = best
	if best < 0.4 {
		return
	}
	if secondPeak(corr, bestLag, envLobe) >= delayUnique*best {
		// Another lag explains the mic nearly as well: a far end whose
		// envelope repeats (a melody's notes, a steady beat) within the
		// search. Which one wins is chance; keep the estimate.
		d.ambiguous++
		return
	}
	lag := bestLag * envStep
	// Keep the estimate while the delay grows by less than growSlack: the
	// far end then leads the echo by a little more, still well inside the
	// canceller's filter, and moving it would make the canceller
	// re-converge for nothing (a shift right before a self-interruption
	// through the real PulseAudio echo path, whose delay wanders by tens
	// of ms under load). A shrinking delay (the far end would come after
	// the echo) or a larger growth is accepted after two agreeing
	// estimates.
	if d.have && lag >= d.est-envStep && lag <= d.est+growSlack {
		d.pendingCount = 0
		return
	}
	if abs(lag-d.pending) <= envStep {
		d.pendingCount++
	} else {
		d.pending, d.pendingCount = lag, 1
	}
	if d.pendingCount >= 2 || !d.have {
		d.est, d.have = lag, true
	}
}

func meanEnergy(s []float32) (mean, energy float32) {
	for _, v := range s {
		mean += v
	}
	mean /= float32(len(s))
	for _, v := range s {
		energy += (v - mean) * (v - mean)
	}
	return mean, energy
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Delay returns the current estimate in samples and whether there is one.
func (d *DelayEstimator) Delay() (int, bool) { return d.est, d.have }

// Confidence is the peak correlation of the last update (-1..1).
func (d *DelayEstimator) Confidence() float32 { return d.conf }
