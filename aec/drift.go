package aec

import (
	"math"
	"slices"
)

// Clock drift between the speaker and the mic.
//
// A USB mic and an I²S/HDMI speaker run on separate crystals: the echo of
// what the speaker played slides against the mic's sample count by the
// clock offset (100 ppm: one sample every 0.6 s), and an adaptive filter
// tracking a sliding echo path is always a little behind (measured: 74 dB
// of echo removed without drift, 30 dB with 100 ppm). Source compensates:
// it reads the far end at a fractional position that advances by the
// estimated clock ratio per mic sample (a band-limited fractional
// interpolator, like the adaptive resamplers of WebRTC's and PulseAudio's
// drift compensation), so the canceller sees a stationary echo path.
//
// The ratio is estimated from the echo itself, the signal that matters:
// driftMeter measures the echo's lag behind the far end to a fraction of a
// sample every 250 ms (cross-correlation of pre-emphasised far end and mic
// around the expected lag, parabolic peak), which gives the far-end
// position the mic heard at that mic sample; DriftFit fits a line to those
// (mic sample, far-end position) pairs: its slope is the clock ratio.
// Device timestamps (the sample counts of the capture and playback streams
// against the monotonic clock) would give the same ratio, but they jitter
// by milliseconds (PortAudio's DAC times through ALSA's PulseAudio plugin
// jump by tens of ms): a fit of 1 ms jitter needs minutes to reach a few
// ppm, the echo's lag a few seconds.

// DriftFit estimates the ratio between two clocks from pairs (x, y): x a
// position on one clock (the mic's sample count), y the matching position
// on the other (the far-end sample the mic heard), both in samples. It
// fits y = a + b·x over the last fitPoints pairs, robustly: the slope is
// the Theil–Sen estimate (median of the pairwise slopes), refined by least
// squares over the points within tolerance of it; points off the line
// (a wrong correlation peak) are dropped, and fitStep consecutive points
// that agree with one another but not with the line (the far-end timeline
// was re-anchored: a device underflow, a reopen) restart the window. The
// last good ratio is kept across a restart: the clocks did not change. It
// does not allocate after construction. One goroutine.
type DriftFit struct {
	x, y   []float64 // points, oldest first
	off    []float64 // consecutive off-line points (step candidate)
	offX   []float64
	slopes []float64 // scratch for Theil–Sen
	res    []float64 // scratch
	ratio  float64
	se     float64
	have   bool
	a, b   float64 // current line (b: slope of y-x)
	lineSE float64 // its slope's standard error, ppm
	x0     float64 // origin of x for numerical range
	line   bool
}

// DriftFit parameters: the window (20 s of 250 ms points), the points and
// span needed for an estimate (3 s), the largest slope standard error
// accepted (ppm), the tolerance for a point to be on the line (samples,
// or 4 robust standard deviations of the residuals if larger), and the
// off-line run that means a step.
const (
	fitPoints   = 80
	fitMin      = 10
	fitMinSpan  = 3 * Rate
	fitMaxSEPPM = 5.0
	fitTol      = 1.5
	fitStep     = 4
	// MaxDriftPPM is the largest clock offset accepted (larger slopes
	// are taken for a wrong fit).
	MaxDriftPPM = 1000.0
)

// NewDriftFit returns an empty fit.
func NewDriftFit() *DriftFit {
	return &DriftFit{x: make([]float64, 0, fitPoints), y: make([]float64, 0, fitPoints),
		off: make([]float64, 0, fitStep), offX: make([]float64, 0, fitStep),
		slopes: make([]float64, 0, fitPoints*(fitPoints-1)/2), res: make([]float64, 0, fitPoints), ratio: 1}
}

// Add adds a pair and updates the estimate.
func (f *DriftFit) Add(x, y float64) {
	if len(f.x) == 0 {
		f.x0 = x
	}
	x -= f.x0
	y -= f.x0 // fit y-x: the slope is ratio-1, small
	y -= x
	// A point off the line is judged against it only once the line is
	// credible (its slope's standard error within fitMaxSEPPM). A line
	// through fitMin points most of them wrong (in `make run` four blocks
	// at a pitch-period peak and three of a tone, then the echo's) held a
	// slope of 3918 ppm: every point on the echo's line was off it, and
	// four of them never agreed along that slope, so none was taken and
	// the offset was never found.
	if f.line && len(f.x) >= fitMin && f.lineSE <= fitMaxSEPPM {
		if r := y - (f.a + f.b*x); math.Abs(r) > f.tol() {
			f.off = append(f.off, y)
			f.offX = append(f.offX, x)
			if len(f.off) < fitStep {
				return
			}
			// A run of off-line points: a step if they agree with
			// one another (along the last slope).
			ok := true
			for i := range f.off {
				if math.Abs((f.off[i]-f.b*f.offX[i])-(f.off[0]-f.b*f.offX[0])) > 2*fitTol {
					ok = false
				}
			}
			if !ok {
				f.off, f.offX = f.off[:0], f.offX[:0]
				return
			}
			f.x, f.y = f.x[:0], f.y[:0]
			f.x = append(f.x, f.offX...)
			f.y = append(f.y, f.off...)
			f.off, f.offX = f.off[:0], f.offX[:0]
			f.line = false
			f.fit()
			return
		}
	}
	f.off, f.offX = f.off[:0], f.offX[:0]
	if len(f.x) == fitPoints {
		copy(f.x, f.x[1:])
		copy(f.y, f.y[1:])
		f.x, f.y = f.x[:fitPoints-1], f.y[:fitPoints-1]
	}
	f.x = append(f.x, x)
	f.y = append(f.y, y)
	f.fit()
}

// tol is how far from the line a point may lie.
func (f *DriftFit) tol() float64 {
	return max(fitTol, 4*f.se0())
}

// se0 is the robust scale (1.4826 MAD) of the residuals of the last fit.
func (f *DriftFit) se0() float64 {
	if len(f.res) < fitMin {
		return 0
	}
	return 1.4826 * median(f.res)
}

func (f *DriftFit) fit() {
	n := len(f.x)
	if n < 3 {
		return
	}
	// Theil–Sen slope and median intercept.
	f.slopes = f.slopes[:0]
	for i := range n {
		for j := i + 1; j < n; j++ {
			if dx := f.x[j] - f.x[i]; dx > 0 {
				f.slopes = append(f.slopes, (f.y[j]-f.y[i])/dx)
			}
		}
	}
	if len(f.slopes) == 0 {
		return
	}
	b := median(f.slopes)
	f.res = f.res[:0]
	for i := range n {
		f.res = append(f.res, f.y[i]-b*f.x[i])
	}
	a := median(f.res)
	for i := range f.res {
		f.res[i] = math.Abs(f.y[i] - a - b*f.x[i])
	}
	tol := max(fitTol, 4*1.4826*median(f.res))
	// Least squares over the inliers.
	var sx, sy, k float64
	for i := range n {
		if math.Abs(f.y[i]-a-b*f.x[i]) <= tol {
			sx += f.x[i]
			sy += f.y[i]
			k++
		}
	}
	if k < 3 {
		return
	}
	mx, my := sx/k, sy/k
	var sxx, sxy float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range n {
		if math.Abs(f.y[i]-a-b*f.x[i]) <= tol {
			dx := f.x[i] - mx
			sxx += dx * dx
			sxy += dx * (f.y[i] - my)
			lo, hi = min(lo, f.x[i]), max(hi, f.x[i])
		}
	}
	if sxx == 0 {
		return
	}
	b = sxy / sxx
	a = my - b*mx
	var ss float64
	for i := range n {
		if r := f.y[i] - a - b*f.x[i]; math.Abs(r) <= tol {
			ss += r * r
		}
	}
	se := math.Inf(1)
	if k > 2 {
		se = math.Sqrt(ss/(k-2)/sxx) * 1e6
	}
	f.a, f.b, f.line, f.lineSE = a, b, true, se
	if k >= fitMin && hi-lo >= fitMinSpan && se <= fitMaxSEPPM && math.Abs(b)*1e6 <= MaxDriftPPM {
		f.ratio, f.se, f.have = 1+b, se, true
	}
}

// Ratio returns the estimated clock ratio (y samples per x sample; 1 +
// the offset) and whether there is one yet.
func (f *DriftFit) Ratio() (float64, bool) { return f.ratio, f.have }

// PPM returns the estimated offset in parts per million (0 without one).
func (f *DriftFit) PPM() float64 { return (f.ratio - 1) * 1e6 }

// StdErrPPM is the standard error of the last accepted estimate, ppm.
func (f *DriftFit) StdErrPPM() float64 { return f.se }

// median sorts s in place.
func median(s []float64) float64 {
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// driftMeter measures, every block of mic samples, the lag of the echo
// behind the far end as handed to the canceller, to a fraction of a
// sample, and feeds DriftFit with the far-end position the mic heard.
type driftMeter struct {
	fit      *DriftFit
	hist     []float32 // pre-emphasised far end, ring by mic sample
	mic      []float32 // pre-emphasised mic, the current block
	corr     []float64
	n        int64 // mic samples pushed since the last discontinuity
	total    int64 // mic samples pushed ever
	fPrev    float32
	mPrev    float32
	center   int     // lag searched around (samples), -1: none yet
	acquire  bool    // center is the coarse estimator's lag: search ±driftAcquire
	fails    int     // blocks in a row with the far end playing and no peak
	posMid   float64 // far-end position of the block's middle sample
	stepMid  float64
	farE     float64
	measured int // accepted measurements, for tests
}

// driftMeter parameters: block (250 ms), lag search ±driftSearch around
// the last lag, history for lags up to driftMaxLag, the normalised
// correlation a peak needs, and the failed blocks after which the search
// moves to the coarse delay estimator's lag.
const (
	driftBlock  = Rate / 4
	driftSearch = 64
	// driftAcquire: the search's half-width while the center is the
	// coarse delay estimator's lag (at the start, and after
	// driftRecover failed blocks), until a block measures. That lag, from
	// 2 ms envelopes, was 7-8 ms off in `make run` (46 and 32 ms for an
	// echo at 39 ms); the voice's pitch (150-170 Hz) then put a peak
	// within ±4 ms of it one pitch period off the echo (correlation
	// 0.4-0.8), four such points went into the fit, and the clock offset
	// was found only in the third reply instead of the second (the
	// guards that wait for it missed the user talking over that reply).
	driftAcquire = 256
	driftMaxLag  = Rate * 3 / 4 // 750 ms
	driftHistLen = 1 << 15      // > driftBlock + driftMaxLag + driftAcquire
	driftMinCorr = 0.3
	driftRecover = 8
	preEmphasis  = 0.95
	// driftUnique, driftLobe: a block whose correlation has another local
	// maximum at least driftLobe samples (1 ms) from the highest and
	// driftUnique of its height or more measures nothing. In `make run`
	// the first block of the wide search held the echo at 0.88 and the
	// voice's pitch-period peak 84 samples off at 0.81, and the reply's
	// tone 0.98 with peaks every 24-55 samples at 0.97 (three wrong points
	// in every run); a voiced block with one clear peak had its next one
	// at 0.02-0.2 of it.
	driftUnique = 0.8
	driftLobe   = Rate / 1000
)

func newDriftMeter() *driftMeter {
	return &driftMeter{fit: NewDriftFit(), hist: make([]float32, driftHistLen), mic: make([]float32, driftBlock),
		corr: make([]float64, 2*driftAcquire+1), center: -1}
}

// discontinuity: the far end handed to the canceller jumped (the delay
// taken out before it changed, or the timelines were re-anchored): the
// history is no longer one signal.
func (d *driftMeter) discontinuity() {
	d.n = 0
	d.center = -1
	d.fails = 0
}

// push adds far (as handed to the canceller) and mic samples of one frame;
// pos is the far-end position (reference ring index, fractional) of
// far[0], step its advance per mic sample; hint is the coarse delay
// estimator's lag of the echo behind far (samples, < 0: none).
func (d *driftMeter) push(far, mic []int16, pos, step float64, hint int) {
	for i := range far {
		fv, mv := float32(far[i]), float32(mic[i])
		k := int(d.n % driftBlock)
		d.hist[d.total&(driftHistLen-1)] = fv - preEmphasis*d.fPrev
		d.mic[k] = mv - preEmphasis*d.mPrev
		d.farE += float64(fv) * float64(fv)
		d.fPrev, d.mPrev = fv, mv
		if k == driftBlock/2 {
			d.posMid, d.stepMid = pos+float64(i)*step, step
		}
		d.n++
		d.total++
		if d.n%driftBlock == 0 {
			d.block(hint)
			d.farE = 0
		}
	}
}

// block measures the lag over the block just completed.
func (d *driftMeter) block(hint int) {
	active := d.farE > farActive*farActive*driftBlock
	if d.center < 0 || (d.fails >= driftRecover && hint >= 0) {
		d.center, d.fails, d.acquire = hint, 0, true
	}
	c := d.center
	search := driftSearch
	if d.acquire {
		search = driftAcquire
	}
	if c < 0 || !active || d.n < int64(driftBlock+c+search) {
		return
	}
	c = max(c, search)
	c = min(c, driftMaxLag-search)
	corr := d.corr[:2*search+1]
	end := d.total // mic sample index after the block
	start := end - driftBlock
	var em float64
	for _, v := range d.mic {
		em += float64(v) * float64(v)
	}
	best, bl := math.Inf(-1), 0
	for li := range corr {
		lag := c - search + li
		var s float32
		h := start - int64(lag)
		for i, v := range d.mic {
			s += v * d.hist[(h+int64(i))&(driftHistLen-1)]
		}
		corr[li] = float64(s)
		if corr[li] > best {
			best, bl = corr[li], li
		}
	}
	var ef float64
	h := start - int64(c-search+bl)
	for i := range driftBlock {
		v := float64(d.hist[(h+int64(i))&(driftHistLen-1)])
		ef += v * v
	}
	if em == 0 || ef == 0 || best/math.Sqrt(em*ef) < driftMinCorr || bl == 0 || bl == len(corr)-1 {
		d.fails++
		if bl == 0 || bl == len(corr)-1 {
			// The peak is at the edge: look there next time.
			if best > 0 && em > 0 && ef > 0 && best/math.Sqrt(em*ef) >= driftMinCorr {
				d.center = c - search + bl
			}
		}
		return
	}
	if secondPeak(corr, bl, driftLobe) >= driftUnique*corr[bl] {
		// Another peak nearly as high: a periodic far end (a voiced
		// stretch, a tone) correlates with its echo one period off too,
		// and which peak wins is chance. Nothing is measured, and the
		// search stays where it was.
		d.fails++
		return
	}
	d.fails, d.acquire = 0, false
	y0, y1, y2 := corr[bl-1], corr[bl], corr[bl+1]
	frac := 0.0
	if den := y0 - 2*y1 + y2; den < 0 {
		frac = 0.5 * (y0 - y2) / den
	}
	lag := float64(c-search+bl) + frac
	d.center = c - search + bl
	d.measured++
	// The block's middle mic sample heard the far end lag samples of
	// this stream earlier: its position minus lag stream samples.
	d.fit.Add(float64(end-driftBlock/2), d.posMid-d.stepMid*lag)
}
