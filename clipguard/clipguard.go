// Package clipguard lowers the robot's own voice while its echo clips the
// microphone, and gives the level back once the echo has stopped clipping
// for a long time.
//
// A speaker loud at the mic (close to it, turned up by an installer) makes
// the mic clip on the reply's peaks. Clipping is not in any linear echo
// path, so no canceller removes it: the residual holds the robot's voice,
// and the onset guard, which must then treat clipped reads as echo, also
// holds the user who talks over the robot. Lowering the voice a few dB
// removes the cause; the robot is quieter, and says so in its log.
//
// Sink wraps the speaker above the echo canceller's reference tap (the
// reference must be what the device plays). On each Write it reads the
// mic side's count of clipped echo frames (Counter, aec.Source.EchoClips):
// Clips of them within Window lower the gain by StepDB, down to MaxDB
// below unity; the clips of the Settle after a step are not counted (the
// level is judged anew). Once the robot has played for Recover without a clipped
// echo frame, the gain goes StepDB back up. Every change is a per-sample
// ramp over Ramp, so the output has no step.
//
// # Concurrency
//
// Write is called by one goroutine (the player). Counter.EchoClips is read
// there and must be safe against the mic goroutine that counts. BackoffDB
// may be called from any goroutine. Write does not allocate once its
// buffer has grown to the largest block written.
package clipguard

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gainramp"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// Counter counts mic frames the robot's echo clipped (aec.Source).
type Counter interface {
	EchoClips() int64
}

// Metric names (docs/metrics.md).
const (
	MetricBackoff = "robot_agent_clipguard_backoff_db"
	MetricDown    = "robot_agent_clipguard_steps_down_total"
	MetricUp      = "robot_agent_clipguard_steps_up_total"
	MetricClips   = "robot_agent_clipguard_echo_clips_total"
)

// Defaults of Config (docs/audio.md, "A speaker that clips the mic").
const (
	DefaultMaxDB   = 12.0
	DefaultStepDB  = 3.0
	DefaultClips   = 3
	DefaultWindow  = 5 * time.Second
	DefaultSettle  = time.Second
	DefaultRecover = 10 * time.Minute
	DefaultRamp    = 20 * time.Millisecond
)

// ErrConfig wraps invalid configurations.
var ErrConfig = errors.New("clipguard: invalid config")

// Config configures a Sink. Zero fields take the defaults.
type Config struct {
	// MaxDB is the most the voice is lowered, in dB (positive).
	MaxDB float64
	// StepDB is one step down or up.
	StepDB float64
	// Clips clipped echo frames (10 ms) within Window make a step down.
	Clips  int
	Window time.Duration
	// Settle: after a step down, the next waits this long.
	Settle time.Duration
	// Recover: this much playback without a clipped echo frame makes a
	// step back up; negative: never.
	Recover time.Duration
	// Ramp is the duration of one gain change.
	Ramp time.Duration
}

func (c Config) withDefaults() Config {
	if c.MaxDB == 0 {
		c.MaxDB = DefaultMaxDB
	}
	if c.StepDB == 0 {
		c.StepDB = DefaultStepDB
	}
	if c.Clips == 0 {
		c.Clips = DefaultClips
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Settle == 0 {
		c.Settle = DefaultSettle
	}
	if c.Recover == 0 {
		c.Recover = DefaultRecover
	}
	if c.Ramp == 0 {
		c.Ramp = DefaultRamp
	}
	return c
}

// Validate checks c (after defaults), naming the field and the value.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.MaxDB < 0 || c.MaxDB > 30 {
		errs = append(errs, fmt.Errorf("%w: max %v dB out of range 0..30", ErrConfig, c.MaxDB))
	}
	if c.StepDB < 0.5 || c.StepDB > 12 {
		errs = append(errs, fmt.Errorf("%w: step %v dB out of range 0.5..12", ErrConfig, c.StepDB))
	}
	if c.Clips < 1 || c.Clips > maxClips {
		errs = append(errs, fmt.Errorf("%w: clips %d out of range 1..%d", ErrConfig, c.Clips, maxClips))
	}
	if c.Window < 10*time.Millisecond || c.Window > time.Minute {
		errs = append(errs, fmt.Errorf("%w: window %v out of range 10ms..1m", ErrConfig, c.Window))
	}
	if c.Settle < 0 || c.Settle > time.Minute {
		errs = append(errs, fmt.Errorf("%w: settle %v out of range 0..1m", ErrConfig, c.Settle))
	}
	if c.Recover > 24*time.Hour {
		errs = append(errs, fmt.Errorf("%w: recover %v above 24h", ErrConfig, c.Recover))
	}
	if c.Ramp < time.Millisecond || c.Ramp > time.Second {
		errs = append(errs, fmt.Errorf("%w: ramp %v out of range 1ms..1s", ErrConfig, c.Ramp))
	}
	return errors.Join(errs...)
}

// maxClips bounds Config.Clips (the Sink keeps their times in an array).
const maxClips = 64

// Sink is an hw.AudioSink whose gain follows the echo's clipping. See the
// package documentation.
type Sink struct {
	hw.SinkDecorator // the speaker below; Unwrap, PeriodFrames
	clk              clock.Clock
	log              *slog.Logger
	cfg              Config
	src              Counter
	rate             int
	ch               int

	seen   int64                   // src.EchoClips at the last Write
	times  [maxClips]time.Duration // the last cfg.Clips clip times, a ring
	nTimes int
	head   int
	settle time.Duration // no step down before this
	steps  atomic.Int64  // steps down in force (written by Write only; BackoffDB reads it)
	clean  time.Duration // playback since the last clip
	ramp   gainramp.Ramp // the gain applied (ramping), one StepDB change per Ramp
	target float32

	gBackoff          *metrics.Gauge
	cDown, cUp, cClip *metrics.Counter
}

// New wraps sink; src counts the clipped echo frames. reg and log may be
// nil.
func New(sink hw.AudioSink, src Counter, cfg Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil || src == nil || clk == nil {
		return nil, errors.New("clipguard: New needs a sink, a counter and a clock")
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	f := sink.Format()
	s := &Sink{SinkDecorator: hw.SinkDecorator{AudioSink: sink}, src: src, clk: clk, log: log, cfg: cfg, rate: f.SampleRate, ch: max(f.Channels, 1),
		seen: src.EchoClips(), ramp: gainramp.Ramp{Gain: 1}, target: 1,
		gBackoff: reg.Gauge(MetricBackoff, "How far the robot's voice is lowered because its echo clipped the mic, in dB (full duplex)."),
		cDown:    reg.Counter(MetricDown, "Steps down of the robot's voice: its echo clipped the mic."),
		cUp:      reg.Counter(MetricUp, "Steps back up of the robot's voice after playing long without a clipped echo."),
		cClip:    reg.Counter(MetricClips, "Mic frames (10 ms) the robot's own echo clipped while it spoke."),
	}
	ramp := max(1, int(cfg.Ramp*time.Duration(s.rate)/time.Second))
	step := float32(1-math.Pow(10, -cfg.StepDB/20)) / float32(ramp)
	s.ramp.Down, s.ramp.Up = step, step
	return s, nil
}

// Config returns the effective configuration.
func (s *Sink) Config() Config { return s.cfg }

// BackoffDB is how far the voice is lowered now (the target of the ramp).
// Any goroutine.
func (s *Sink) BackoffDB() float64 { return float64(s.steps.Load()) * s.cfg.StepDB }

// Write implements hw.AudioSink.
func (s *Sink) Write(p []int16) error {
	now := s.clk.Mono()
	s.observe(now, p)
	return s.AudioSink.Write(s.ramp.Scale(p, s.ch, s.target))
}

// observe takes in the clips counted since the last Write and steps the
// target.
func (s *Sink) observe(now time.Duration, p []int16) {
	c := s.src.EchoClips()
	d := c - s.seen
	s.seen = c
	if d > 0 {
		s.cClip.Add(d)
		s.clean = 0
		if now < s.settle {
			// Just after a step: judged at the new level, after Settle.
			return
		}
		for range min(d, int64(s.cfg.Clips)) {
			s.times[s.head] = now
			s.head = (s.head + 1) % s.cfg.Clips
			s.nTimes = min(s.nTimes+1, s.cfg.Clips)
		}
		// The oldest of the last Clips clips: head, once the ring is full.
		if s.nTimes == s.cfg.Clips && now-s.times[s.head] <= s.cfg.Window && s.canStepDown() {
			s.steps.Add(1)
			s.nTimes = 0
			s.settle = now + s.cfg.Settle
			s.cDown.Inc()
			s.setTarget()
			s.log.Warn("clipguard: the robot's own voice clips the mic; its volume is lowered (turn the speaker down or the mic gain down to get it back)",
				"lowered_db", s.BackoffDB(), "max_db", s.cfg.MaxDB)
		}
		return
	}
	if s.steps.Load() == 0 || s.cfg.Recover < 0 || !audible(p) {
		return
	}
	s.clean += time.Duration(len(p)/s.ch) * time.Second / time.Duration(s.rate)
	if s.clean >= s.cfg.Recover {
		s.steps.Add(-1)
		s.clean = 0
		s.cUp.Inc()
		s.setTarget()
		s.log.Info("clipguard: no clipped echo for a while; the robot's volume goes one step back up",
			"lowered_db", s.BackoffDB(), "after", s.cfg.Recover)
	}
}

func (s *Sink) canStepDown() bool {
	return s.BackoffDB()+s.cfg.StepDB <= s.cfg.MaxDB+1e-9
}

func (s *Sink) setTarget() {
	db := s.BackoffDB()
	s.target = float32(math.Pow(10, -db/20))
	s.gBackoff.Set(int64(math.Round(db)))
}

// Gain is the gain applied to the last sample written (Write goroutine;
// tests).
func (s *Sink) Gain() float64 { return float64(s.ramp.Gain) }

func audible(p []int16) bool {
	for _, v := range p {
		if v > 64 || v < -64 {
			return true
		}
	}
	return false
}
