package main

import (
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// Half-duplex safety: while the robot's own voice comes out of the speaker
// (and for a tail after it, for the room's echo), the mic must not make the
// robot interrupt itself.
//
// A speechTap watches what the player writes to the speaker; the speaker
// is audible from a Write until the written audio has passed the output
// queue and the device (the sink's Latency). speakingGate turns that into
// a capture.Gate (VAD mode: no utterance onset while speaking), and
// mutedMic into silence on the mic (mode mute, for continuous mode).

// audibleThreshold is the peak above which a written block counts as
// audible speech (about -50 dBFS; the player writes exact zeros when idle).
const audibleThreshold = 100

// latencyReporter is a sink that knows how long written audio takes to be
// heard (portaudio.Sink).
type latencyReporter interface{ Latency() time.Duration }

// speechTap records when the last audible block was written to a sink.
// observe is called by the sink's Write goroutine; speaking by any.
type speechTap struct {
	clk      clock.Clock
	lat      latencyReporter // nil: no output latency known
	tail     time.Duration
	rate     int
	until    atomic.Int64 // clock.Mono ns until which written audio plays
	lastLoud atomic.Int64 // clock.Mono ns of the last audible Write (tests)
}

func newSpeechTap(clk clock.Clock, lat latencyReporter, rate int, tail time.Duration) *speechTap {
	return &speechTap{clk: clk, lat: lat, rate: rate, tail: tail}
}

// observe notes a block about to be written. It does not allocate.
func (t *speechTap) observe(p []int16) {
	loud := false
	for _, v := range p {
		if v > audibleThreshold || v < -audibleThreshold {
			loud = true
			break
		}
	}
	if !loud {
		return
	}
	now := t.clk.Mono()
	t.lastLoud.Store(int64(now))
	t.until.Store(int64(now + time.Duration(len(p))*time.Second/time.Duration(t.rate)))
}

// speaking reports whether audible output is (or may still be) playing,
// including the tail.
func (t *speechTap) speaking() bool {
	until := time.Duration(t.until.Load())
	if until == 0 {
		return false
	}
	if t.lat != nil {
		until += t.lat.Latency()
	}
	return t.clk.Mono() < until+t.tail
}

// Gated implements capture.Gate.
func (t *speechTap) Gated() bool { return t.speaking() }

// tappedSink writes through a speechTap. It is the interface halfDuplexGate
// looks for on the agent's speaker.
type tappedSink interface {
	hw.AudioSink
	speechTap() *speechTap
	halfDuplexMode() string
}

// halfDuplexGate returns the gate for the capture pump: the speaker's tap
// in mode gate, nil otherwise (simulated devices, modes mute and off).
func (a *agent) halfDuplexGate() capture.Gate {
	t, ok := findSink[tappedSink](a.speaker)
	if !ok || t.halfDuplexMode() != halfDuplexGate {
		return nil
	}
	return t.speechTap()
}

// findSink finds the sink with capability T in s or in the sinks s wraps
// (those with Unwrap() hw.AudioSink, and the service watchdog's
// beatingSink), so optional capabilities survive decorating wrappers.
func findSink[T any](s hw.AudioSink) (T, bool) {
	for range 8 {
		if t, ok := s.(T); ok {
			return t, true
		}
		switch w := s.(type) {
		case interface{ Unwrap() hw.AudioSink }:
			s = w.Unwrap()
		default:
			var zero T
			return zero, false
		}
	}
	var zero T
	return zero, false
}
