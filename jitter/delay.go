// Package jitter estimates how much audio a playout buffer should hold so
// that a stream arriving with network jitter rarely runs dry: a delay
// manager in the manner of WebRTC NetEQ's.
//
// For every chunk that arrives, Manager.Arrive computes the chunk's
// relative delay: how much later it arrived than the fastest chunk of the
// last Window, once both are placed on the stream's own timeline (the
// chunk's position in samples divided by the sample rate). A stream that
// arrives exactly in real time, or faster, has relative delay 0. The
// relative delays feed a histogram with exponential forgetting (each new
// observation multiplies the old mass by ForgetFactor), and the target
// delay is the histogram's Quantile. The histogram starts by averaging
// (the forgetting factor ramps up from 0 to ForgetFactor over the first
// observations), so the first seconds of a session already give a usable
// estimate.
//
// # Concurrency
//
// A Manager is used by one goroutine (the playback producer). Target is
// also published through an atomic so that TargetSamples may be called from
// any goroutine (the playback consumer). Nothing allocates after New.
package jitter

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// ErrConfig wraps every Config validation error.
var ErrConfig = errors.New("jitter: invalid config")

// Defaults.
const (
	DefaultBucketMS     = 5
	DefaultRangeMS      = 3000
	DefaultQuantile     = 0.985
	DefaultForgetFactor = 0.99995 // per observation: ~400 s memory at 50 chunks/s
	DefaultWindowMS     = 2000
)

// Config tunes the estimator. Zero fields take the defaults.
type Config struct {
	SampleRate int // Hz of the stream timeline, default 24000
	// BucketMS is the histogram resolution (default 5 ms); RangeMS its
	// extent (default 3000 ms; later arrivals count in the last bucket).
	BucketMS, RangeMS int
	// Quantile of relative delay the target covers (default 0.985).
	Quantile float64
	// ForgetFactor is how much of the histogram's mass survives each new
	// observation (default 0.99995: about 400 s of 20 ms chunks, so the
	// rare long delays of a link that blocks now and then are counted over
	// several minutes and the target stays steady between them).
	ForgetFactor float64
	// WindowMS is how far back the fastest arrival is looked for (2000).
	WindowMS int
}

func (c Config) withDefaults() Config {
	if c.SampleRate == 0 {
		c.SampleRate = 24000
	}
	if c.BucketMS == 0 {
		c.BucketMS = DefaultBucketMS
	}
	if c.RangeMS == 0 {
		c.RangeMS = DefaultRangeMS
	}
	if c.Quantile == 0 {
		c.Quantile = DefaultQuantile
	}
	if c.ForgetFactor == 0 {
		c.ForgetFactor = DefaultForgetFactor
	}
	if c.WindowMS == 0 {
		c.WindowMS = DefaultWindowMS
	}
	return c
}

// Validate reports the first invalid field after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.SampleRate < 1000:
		return fmt.Errorf("%w: SampleRate=%d below 1000", ErrConfig, c.SampleRate)
	case c.BucketMS < 1 || c.RangeMS < c.BucketMS || c.RangeMS/c.BucketMS > 100000:
		return fmt.Errorf("%w: BucketMS=%d RangeMS=%d must satisfy 1 <= BucketMS <= RangeMS, at most 100000 buckets", ErrConfig, c.BucketMS, c.RangeMS)
	case c.Quantile <= 0 || c.Quantile >= 1:
		return fmt.Errorf("%w: Quantile=%g must be in (0, 1)", ErrConfig, c.Quantile)
	case c.ForgetFactor <= 0 || c.ForgetFactor >= 1:
		return fmt.Errorf("%w: ForgetFactor=%g must be in (0, 1)", ErrConfig, c.ForgetFactor)
	case c.WindowMS < 1:
		return fmt.Errorf("%w: WindowMS=%d must be positive", ErrConfig, c.WindowMS)
	}
	return nil
}

// windowLen is how many recent arrivals the reference window remembers.
const windowLen = 256

type arrival struct {
	at    time.Duration
	value time.Duration // arrival time minus stream position
}

// Manager is the delay estimator. See the package doc.
type Manager struct {
	cfg    Config
	hist   []float64
	n      int64 // observations so far (for the start-up ramp)
	win    [windowLen]arrival
	wn     int // entries in win since Reset
	target atomic.Int64
	ahead  atomic.Int64
	tail   atomic.Uint64 // float64 bits: scale of 1-Quantile (SetTailScale)
	last   time.Duration // last relative delay
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := &Manager{cfg: cfg, hist: make([]float64, cfg.RangeMS/cfg.BucketMS)}
	m.tail.Store(math.Float64bits(1))
	return m, nil
}

// Reset starts a new stream timeline (a new response): the reference
// window is forgotten, the histogram (what the network is like) is kept.
func (m *Manager) Reset() { m.wn = 0; m.ahead.Store(math.MaxInt64) }

// Arrive records that the chunk starting at sample pos of the current
// stream arrived at time now, and returns its relative delay.
func (m *Manager) Arrive(now time.Duration, pos int64) time.Duration {
	v := now - time.Duration(pos)*time.Second/time.Duration(m.cfg.SampleRate)
	ref := v
	lim := now - time.Duration(m.cfg.WindowMS)*time.Millisecond
	half := now - time.Duration(m.cfg.WindowMS)*time.Millisecond/2
	newer, older, haveOlder := v, time.Duration(0), false
	for i := m.wn - 1; i >= max(0, m.wn-windowLen); i-- {
		a := m.win[i%windowLen]
		if a.at < lim {
			break
		}
		ref = min(ref, a.value)
		if a.at >= half {
			newer = min(newer, a.value)
		} else if !haveOlder || a.value < older {
			older, haveOlder = a.value, true
		}
	}
	// How far the fastest arrival of the newer half of the window is
	// ahead of the fastest of the older half: > 0 when the stream arrives
	// faster than it plays (a gateway running ahead). Jitter and the
	// catch-up burst after a stall do not count: they only return to the
	// earlier fastest arrival.
	switch {
	case !haveOlder:
		m.ahead.Store(math.MaxInt64) // not known yet: assume ahead
	case older > newer:
		m.ahead.Store(int64(older - newer))
	default:
		m.ahead.Store(0)
	}
	m.win[m.wn%windowLen] = arrival{at: now, value: v}
	m.wn++
	rel := v - ref
	m.last = rel
	m.observe(rel)
	return rel
}

// observe adds one relative delay to the histogram and republishes the
// target.
func (m *Manager) observe(rel time.Duration) {
	m.n++
	f := m.cfg.ForgetFactor
	if ramp := 1 - 1/float64(m.n); ramp < f {
		f = ramp
	}
	b := int(rel / (time.Duration(m.cfg.BucketMS) * time.Millisecond))
	b = min(max(b, 0), len(m.hist)-1)
	for i := range m.hist {
		m.hist[i] *= f
	}
	m.hist[b] += 1 - f
	// Quantile: the upper edge of the bucket where the mass crosses it.
	q, sum := 1-(1-m.cfg.Quantile)*math.Float64frombits(m.tail.Load()), 0.0
	k := len(m.hist) - 1
	for i, p := range m.hist {
		sum += p
		if sum >= q {
			k = i
			break
		}
	}
	ms := int64((k + 1) * m.cfg.BucketMS)
	if k == 0 {
		ms = 0 // no measurable jitter
	}
	m.target.Store(ms * int64(m.cfg.SampleRate) / 1000)
}

// SetTailScale scales the tail the target leaves uncovered: the target
// becomes the 1-(1-Quantile)*s quantile from the next arrival on. A caller
// that measures how much audio it had to conceal uses it to spend a
// concealment budget (playback does). s is clamped to [1/4096, 4]. Any
// goroutine.
func (m *Manager) SetTailScale(s float64) {
	if !(s >= 1.0/4096) { // also NaN
		s = 1.0 / 4096
	}
	m.tail.Store(math.Float64bits(min(s, 4)))
}

// TargetSamples returns the current quantile of relative delay, in samples
// of the stream. Any goroutine.
func (m *Manager) TargetSamples() int64 { return m.target.Load() }

// Ahead returns how far the newer half of the last Window arrived ahead of
// real time compared with the older half: > 0 for a stream sent faster
// than real time. Until the current stream has half a Window of history it
// returns math.MaxInt64 (unknown: a TTS reply usually starts with a
// burst). Any goroutine.
func (m *Manager) Ahead() time.Duration { return time.Duration(m.ahead.Load()) }

// Last returns the relative delay of the latest arrival. Producer only.
func (m *Manager) Last() time.Duration { return m.last }
