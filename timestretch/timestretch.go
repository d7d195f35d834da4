// Package timestretch changes the duration of PCM16 speech without changing
// its pitch, one pitch period at a time, in the manner of WSOLA and of
// NetEQ's accelerate / preemptive-expand operations.
//
// Accelerate removes one period: it finds the lag L (one or more pitch
// periods, between MinLag and MaxLag) at which x[0:L] best matches
// x[L:2L] (normalised cross-correlation) and replaces both by a single
// segment that cross-fades from x[0:L] into x[L:2L]. Decelerate inserts one
// period: x[0:L], a cross-fade from x[L:2L] into x[0:L], then x[L:2L]. In
// both cases every junction joins samples that were neighbours in the input
// (or one period apart in a periodic signal), so there is no discontinuity
// and the period, hence the pitch, is unchanged.
//
// An operation is only done where it will not be heard: in a periodic
// (voiced) stretch whose best correlation reaches MinCorrelation, or in a
// quiet stretch whose energy is below QuietLevel. Otherwise the Stretcher
// declines (ok == false) and the caller tries again a little later, so the
// operations land on steady vowels and pauses rather than on onsets.
//
// # Concurrency
//
// A Stretcher is used by one goroutine at a time (the playback consumer).
// Accelerate and Decelerate never allocate: all scratch space is made by
// New.
package timestretch

import (
	"errors"
	"fmt"
	"math"

	"github.com/robot-agent/robot-agent/codec/pcm"
)

// ErrConfig wraps every Config validation error.
var ErrConfig = errors.New("timestretch: invalid config")

// Config sets the search range and acceptance thresholds. Zero fields take
// the defaults for 24 kHz speech.
type Config struct {
	SampleRate int // Hz, default 24000
	// MinLag and MaxLag bound the period searched, in samples (defaults
	// 2.5 ms and 15 ms: pitch 67–400 Hz).
	MinLag, MaxLag int
	// MinCorrelation is the normalised correlation above which a stretch is
	// periodic enough to shorten or lengthen (default 0.8).
	MinCorrelation float64
	// QuietLevel is the RMS (full scale 32768) under which any stretch may
	// be shortened or lengthened whatever its correlation (default 300,
	// about -41 dBFS).
	QuietLevel float64
}

func (c Config) withDefaults() Config {
	if c.SampleRate == 0 {
		c.SampleRate = 24000
	}
	if c.MinLag == 0 {
		c.MinLag = c.SampleRate / 400
	}
	if c.MaxLag == 0 {
		c.MaxLag = c.SampleRate * 15 / 1000
	}
	if c.MinCorrelation == 0 {
		c.MinCorrelation = 0.8
	}
	if c.QuietLevel == 0 {
		c.QuietLevel = 300
	}
	return c
}

// decim is the decimation factor of the coarse lag search.
const decim = 4

// Stretcher does one accelerate or decelerate operation at a time.
type Stretcher struct {
	cfg  Config
	down []float32 // decimated input for the coarse search
}

// New returns a Stretcher for cfg (zero fields take defaults).
func New(cfg Config) (*Stretcher, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.SampleRate < 8000 || cfg.SampleRate > 192000:
		return nil, fmt.Errorf("%w: SampleRate=%d out of range [8000, 192000]", ErrConfig, cfg.SampleRate)
	case cfg.MinLag < 2*decim || cfg.MaxLag <= cfg.MinLag || cfg.MaxLag > cfg.SampleRate/10:
		return nil, fmt.Errorf("%w: lags [%d, %d] must satisfy %d <= MinLag < MaxLag <= SampleRate/10", ErrConfig, cfg.MinLag, cfg.MaxLag, 2*decim)
	case cfg.MinCorrelation < 0 || cfg.MinCorrelation > 1:
		return nil, fmt.Errorf("%w: MinCorrelation=%g out of range [0, 1]", ErrConfig, cfg.MinCorrelation)
	case cfg.QuietLevel < 0:
		return nil, fmt.Errorf("%w: QuietLevel=%g is negative", ErrConfig, cfg.QuietLevel)
	}
	return &Stretcher{
		cfg:  cfg,
		down: make([]float32, 2*cfg.MaxLag/decim+2),
	}, nil
}

// Need is how many input samples an operation looks at: 2*MaxLag.
func (s *Stretcher) Need() int { return 2 * s.cfg.MaxLag }

// MaxLag is the longest period (and so the most samples) one operation can
// remove or insert.
func (s *Stretcher) MaxLag() int { return s.cfg.MaxLag }

// Quiet reports whether the Need() samples at the start of x (fewer if x
// is shorter) are below QuietLevel: a pause, where an operation is
// inaudible whatever the signal's periodicity, so a caller may stretch
// there more often than in speech. It does not allocate.
func (s *Stretcher) Quiet(x []int16) bool {
	x = x[:min(len(x), s.Need())]
	if len(x) == 0 {
		return false
	}
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return math.Sqrt(e/float64(len(x))) < s.cfg.QuietLevel
}

// findLag returns the best lag for x (len >= Need) and whether a stretch of
// that lag is acceptable (periodic or quiet).
func (s *Stretcher) findLag(x []int16) (int, bool) {
	c := s.cfg
	// Energy of the window: quiet stretches are always acceptable; the lag
	// then only needs to be a reasonable one.
	quiet := s.Quiet(x)

	// Coarse search on a 4x decimated (boxcar low-passed) copy.
	nd := 2 * c.MaxLag / decim
	d := s.down[:nd]
	for i := range d {
		j := i * decim
		d[i] = float32(int32(x[j])+int32(x[j+1])+int32(x[j+2])+int32(x[j+3])) / 4
	}
	best, bestC := c.MinLag, -2.0
	for lag := c.MinLag / decim; lag <= c.MaxLag/decim; lag++ {
		if cc := ncorr32(d[:lag], d[lag:2*lag]); cc > bestC {
			best, bestC = lag*decim, cc
		}
	}
	// Refine at full rate around the coarse peak.
	lo, hi := max(c.MinLag, best-decim), min(c.MaxLag, best+decim)
	bestC = -2
	for lag := lo; lag <= hi; lag++ {
		if cc := pcm.NCC(x[:lag], x[lag:2*lag]); cc > bestC {
			best, bestC = lag, cc
		}
	}
	return best, quiet || bestC >= c.MinCorrelation
}

// Accelerate shortens the start of x in place by one period. x must hold
// at least Need() samples. It returns the lag removed (samples) and true,
// or 0 and false when the start of x is neither periodic nor quiet (x is
// then unchanged). After success x[:len(x)-lag] is the new signal.
func (s *Stretcher) Accelerate(x []int16) (int, bool) {
	if len(x) < s.Need() {
		return 0, false
	}
	L, ok := s.findLag(x)
	if !ok {
		return 0, false
	}
	crossfade(x[:L], x[:L], x[L:2*L])
	copy(x[L:], x[2*L:])
	return L, true
}

// Decelerate lengthens the start of x by one period. x must hold at least
// Need() samples and have capacity for len(x)+MaxLag(); it returns the new
// slice (x[:len(x)+lag]) and the lag inserted, or x, 0, false when the start
// of x is neither periodic nor quiet.
func (s *Stretcher) Decelerate(x []int16) ([]int16, int, bool) {
	if len(x) < s.Need() || cap(x) < len(x)+s.cfg.MaxLag {
		return x, 0, false
	}
	L, ok := s.findLag(x)
	if !ok {
		return x, 0, false
	}
	n := len(x)
	x = x[:n+L]
	copy(x[2*L:], x[L:n]) // x[2L:3L] = old x[L:2L], rest shifted
	// x[0:L] unchanged; x[L:2L] = fade from old x[L:2L] (now at x[2L:3L])
	// into x[0:L].
	crossfade(x[L:2*L], x[2*L:3*L], x[:L])
	return x, L, true
}

// crossfade writes to dst a linear fade from a to b (same lengths). dst may
// alias a.
func crossfade(dst, a, b []int16) {
	n := len(dst)
	for i := range dst {
		w := float32(i+1) / float32(n+1)
		dst[i] = int16(math.Round(float64(float32(a[i])*(1-w) + float32(b[i])*w)))
	}
}

func ncorr32(a, b []float32) float64 {
	var ab, aa, bb float32
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return float64(ab) / math.Sqrt(float64(aa)*float64(bb))
}
