// Package volume is the robot's own volume control: a gain on what the
// player hands the speaker, set at any time (a skill the gateway calls, the
// agent's config) and applied as a short per-sample ramp.
//
// Sink wraps the speaker above the echo canceller's reference tap
// (aec.Tap), like the duck and the clip guard: the reference then holds
// the robot's voice at the level the device plays it, so a change of volume
// changes nothing in the echo path the canceller has learnt. Turned below
// the tap (a mixer control, an amplifier knob) the same change is a new
// echo path: measured in a quiet room, a speaker 12 dB quieter for 5 s every
// 20 s made the robot interrupt itself 10-11 times in 30 replies, and 0
// times with the same steps through Sink (docs/benchmarks.md, "The robot's
// own volume control").
//
// # Concurrency
//
// Write is called by one goroutine (the player). SetDB and DB may be called
// from any goroutine; SetDB only stores an atomic. Write does not allocate
// once its buffer has grown to the largest block written.
package volume

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/robot-agent/robot-agent/gainramp"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// MinDB and MaxDB bound the level: 0 dB is the voice as the gateway sent
// it (the control attenuates only: a gain over unity would clip loud
// replies), −60 dB is as good as silent.
const (
	MinDB = -60.0
	MaxDB = 0.0
)

// RampMS is the duration of a change of level (per-sample linear ramp in
// the gain: no click).
const RampMS = 20

// Metric name (docs/metrics.md).
const MetricLevel = "robot_agent_volume_db"

// ErrLevel wraps a level out of range or not a number.
var ErrLevel = errors.New("volume: level out of range")

// Check reports whether db is a level SetDB accepts.
func Check(db float64) error {
	if math.IsNaN(db) || db < MinDB || db > MaxDB {
		return fmt.Errorf("%w: %g dB, want %g..%g", ErrLevel, db, MinDB, MaxDB)
	}
	return nil
}

// Sink is an hw.AudioSink that scales what it passes on by the current
// level. See the package documentation.
type Sink struct {
	hw.SinkDecorator // the speaker below; Unwrap, PeriodFrames
	ch               int
	target           atomic.Uint64 // math.Float64bits of the level in dB
	ramp             gainramp.Ramp // Write goroutine: the gain reached; steps of RampMS from 0 to 1
	level            *metrics.Gauge
}

// New wraps sink at level db (see Check). reg may be nil.
func New(sink hw.AudioSink, db float64, reg *metrics.Registry) (*Sink, error) {
	if sink == nil {
		return nil, errors.New("volume: New needs a sink")
	}
	if err := Check(db); err != nil {
		return nil, err
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	f := sink.Format()
	step := 1 / float32(max(1, f.SampleRate*RampMS/1000))
	s := &Sink{SinkDecorator: hw.SinkDecorator{AudioSink: sink}, ch: max(f.Channels, 1),
		ramp:  gainramp.Ramp{Down: step, Up: step},
		level: reg.Gauge(MetricLevel, "The robot's own volume (dB, 0 = the voice as sent, applied above the echo canceller's reference)."),
	}
	s.target.Store(math.Float64bits(db))
	s.ramp.Gain = gainOf(db)
	s.level.Set(int64(math.Round(db)))
	return s, nil
}

func gainOf(db float64) float32 { return float32(math.Pow(10, db/20)) }

// SetDB sets the level; the output ramps to it over RampMS from the next
// Write. Any goroutine.
func (s *Sink) SetDB(db float64) error {
	if err := Check(db); err != nil {
		return err
	}
	s.target.Store(math.Float64bits(db))
	s.level.Set(int64(math.Round(db)))
	return nil
}

// DB is the level last set. Any goroutine.
func (s *Sink) DB() float64 { return math.Float64frombits(s.target.Load()) }

// Gain is the gain reached (Write goroutine; tests).
func (s *Sink) Gain() float64 { return float64(s.ramp.Gain) }

// Write implements hw.AudioSink.
func (s *Sink) Write(p []int16) error {
	return s.AudioSink.Write(s.ramp.Scale(p, s.ch, gainOf(s.DB())))
}
