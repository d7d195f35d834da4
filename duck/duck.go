// Package duck lowers the robot's own voice the moment the user starts
// talking over it (local ducking) and restores it when the gateway does not
// interrupt the reply within a hold time.
//
// Sink wraps the speaker. Duck (the capture pump detected the start of an
// utterance) takes effect at the next Write if the robot is playing: the
// gain ramps down to -DepthDB over Attack. If no interrupt arrives within
// Hold of the last Duck, the gain ramps back up over Release. Interrupted
// (the gateway's interrupt reached the player) keeps the level down until
// the player falls silent, where the gain returns to unity on silence (no
// audible step). Every change of gain is a per-sample linear ramp, so the
// output has no discontinuity larger than the signal's own.
//
// Put Sink in front of the echo canceller's reference tap (aec.Tap): the
// reference must be exactly what reaches the device, ducked or not.
//
// # Concurrency
//
// Write is called by one goroutine (the player). Duck and Interrupted may be
// called from any goroutine; they only store atomics. Write does not
// allocate once its buffer has grown to the largest block written.
package duck

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gainramp"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// Metric names (docs/metrics.md).
const (
	MetricDucks       = "robot_agent_duck_ducks_total"
	MetricIgnored     = "robot_agent_duck_ignored_total"
	MetricRestored    = "robot_agent_duck_restored_total"
	MetricInterrupted = "robot_agent_duck_interrupted_total"
	MetricActive      = "robot_agent_duck_active"
)

// Defaults of Config (docs/audio.md, "Local ducking").
const (
	DefaultDepthDB = 12.0
	DefaultHold    = 1500 * time.Millisecond
	DefaultAttack  = 10 * time.Millisecond
	DefaultRelease = 200 * time.Millisecond
	// DefaultPlayingWindow: a Duck counts only if the robot played
	// something audible within this (otherwise the user is not talking
	// over the robot and nothing is ducked).
	DefaultPlayingWindow = 300 * time.Millisecond
)

// ErrConfig wraps invalid configurations.
var ErrConfig = errors.New("duck: invalid config")

// Config configures a Sink. Zero fields take the defaults.
type Config struct {
	// DepthDB is the attenuation while ducked, in dB (positive).
	DepthDB float64
	// Hold is how long the level stays down after the last Duck when no
	// interrupt arrives.
	Hold time.Duration
	// Attack and Release are the ramp durations down and back up.
	Attack, Release time.Duration
	// PlayingWindow: see DefaultPlayingWindow.
	PlayingWindow time.Duration
}

func (c Config) withDefaults() Config {
	if c.DepthDB == 0 {
		c.DepthDB = DefaultDepthDB
	}
	if c.Hold == 0 {
		c.Hold = DefaultHold
	}
	if c.Attack == 0 {
		c.Attack = DefaultAttack
	}
	if c.Release == 0 {
		c.Release = DefaultRelease
	}
	if c.PlayingWindow == 0 {
		c.PlayingWindow = DefaultPlayingWindow
	}
	return c
}

// Validate checks c (after defaults), naming the field and the value.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.DepthDB < 0 || c.DepthDB > 60 {
		errs = append(errs, fmt.Errorf("%w: depth %v dB out of range 0..60", ErrConfig, c.DepthDB))
	}
	if c.Hold < 50*time.Millisecond || c.Hold > 30*time.Second {
		errs = append(errs, fmt.Errorf("%w: hold %v out of range 50ms..30s", ErrConfig, c.Hold))
	}
	if c.Attack < time.Millisecond || c.Attack > time.Second {
		errs = append(errs, fmt.Errorf("%w: attack %v out of range 1ms..1s", ErrConfig, c.Attack))
	}
	if c.Release < time.Millisecond || c.Release > 5*time.Second {
		errs = append(errs, fmt.Errorf("%w: release %v out of range 1ms..5s", ErrConfig, c.Release))
	}
	if c.PlayingWindow < 0 || c.PlayingWindow > 10*time.Second {
		errs = append(errs, fmt.Errorf("%w: playing window %v out of range 0..10s", ErrConfig, c.PlayingWindow))
	}
	return errors.Join(errs...)
}

// Sink states (Write goroutine).
const (
	stOpen   = iota // unity gain
	stDucked        // down until the hold expires
	stKept          // down after an interrupt, until the player is silent
)

// Sink is an hw.AudioSink that ducks what it passes on. See the package
// documentation.
type Sink struct {
	hw.SinkDecorator // the speaker below; Unwrap, PeriodFrames
	clk              clock.Clock
	cfg              Config
	rate             int
	ch               int

	floor        float32 // linear gain while ducked
	req, intr    atomic.Uint64
	seenReq      uint64
	seenIntr     uint64
	state        int
	until        time.Duration
	ramp         gainramp.Ramp // the gain applied and its per-frame steps (attack, release)
	lastLoud     time.Duration
	everLoud     bool
	ducks        *metrics.Counter
	ignored      *metrics.Counter
	restored     *metrics.Counter
	interrupted  *metrics.Counter
	active       *metrics.Gauge
	activeReport int64
}

// New wraps sink. reg may be nil.
func New(sink hw.AudioSink, cfg Config, clk clock.Clock, reg *metrics.Registry) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil || clk == nil {
		return nil, errors.New("duck: New needs a sink and a clock")
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	cfg = cfg.withDefaults()
	f := sink.Format()
	s := &Sink{SinkDecorator: hw.SinkDecorator{AudioSink: sink}, clk: clk, cfg: cfg, rate: f.SampleRate, ch: max(f.Channels, 1), ramp: gainramp.Ramp{Gain: 1},
		floor:       float32(math.Pow(10, -cfg.DepthDB/20)),
		ducks:       reg.Counter(MetricDucks, "Local ducks: the user started talking while the robot played, so its voice was lowered."),
		ignored:     reg.Counter(MetricIgnored, "Utterance starts while the robot was silent (nothing to duck)."),
		restored:    reg.Counter(MetricRestored, "Ducks restored because no interrupt arrived within the hold time (false or ignored barge-ins)."),
		interrupted: reg.Counter(MetricInterrupted, "Ducks ended by the gateway's interrupt (true barge-ins)."),
		active:      reg.Gauge(MetricActive, "1 while the robot's voice is ducked."),
	}
	s.ramp.Down = (1 - s.floor) / float32(max(1, int(cfg.Attack*time.Duration(s.rate)/time.Second)))
	s.ramp.Up = (1 - s.floor) / float32(max(1, int(cfg.Release*time.Duration(s.rate)/time.Second)))
	return s, nil
}

// Config returns the effective configuration.
func (s *Sink) Config() Config { return s.cfg }

// Duck asks for the robot's voice to be lowered now (the user started
// talking); it restarts the hold if already ducked. Any goroutine.
func (s *Sink) Duck() { s.req.Add(1) }

// Interrupted tells the Sink that the gateway interrupted the reply: a duck
// in progress is kept until the player falls silent (at most one more
// Hold). Any goroutine.
func (s *Sink) Interrupted() { s.intr.Add(1) }

// Ducked reports whether the Sink is ducking or ramping (Write goroutine
// view; any goroutine may call it for metrics and tests).
func (s *Sink) Ducked() bool { return s.active.Value() == 1 }

// Write implements hw.AudioSink.
func (s *Sink) Write(p []int16) error {
	now := s.clk.Mono()
	silent := isSilent(p)
	if !silent {
		s.lastLoud, s.everLoud = now, true
	}
	if r := s.req.Load(); r != s.seenReq {
		s.seenReq = r
		if s.everLoud && now-s.lastLoud <= s.cfg.PlayingWindow {
			if s.state != stDucked {
				s.ducks.Inc()
			}
			if s.state != stKept {
				s.state = stDucked
			}
			s.until = now + s.cfg.Hold
		} else {
			s.ignored.Inc()
		}
	}
	if i := s.intr.Load(); i != s.seenIntr {
		s.seenIntr = i
		if s.state == stDucked {
			s.state = stKept
			s.until = now + s.cfg.Hold
			s.interrupted.Inc()
		}
	}
	switch s.state {
	case stDucked:
		if now >= s.until {
			s.state = stOpen
			s.restored.Inc()
		}
	case stKept:
		// Normally the player falls silent at once (it flushed the
		// interrupted reply); if it keeps playing for a whole hold, the
		// interrupt was not for what plays: restore.
		if silent || now >= s.until {
			s.state = stOpen
		}
	}
	target := float32(1)
	if s.state != stOpen {
		target = s.floor
	}
	if silent {
		// No audible step on silence: the gain jumps to its target.
		s.ramp.Gain = target
	}
	out := s.ramp.Scale(p, s.ch, target)
	s.report()
	return s.AudioSink.Write(out)
}

func (s *Sink) report() {
	var a int64
	if s.state != stOpen || s.ramp.Gain != 1 {
		a = 1
	}
	if a != s.activeReport {
		s.active.Set(a)
		s.activeReport = a
	}
}

// Gain is the current gain (Write goroutine; tests).
func (s *Sink) Gain() float64 { return float64(s.ramp.Gain) }

func isSilent(p []int16) bool {
	for _, v := range p {
		if v != 0 {
			return false
		}
	}
	return true
}
