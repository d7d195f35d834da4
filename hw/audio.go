// Package hw declares the device seams of robot-agent: small interfaces
// and the errors their implementations share. It holds no driver and
// initialises nothing (like periph's conn): the implementations live in
// subpackages — hw/sim (simulated devices on an injectable clock),
// hw/portaudio (real audio, build tag portaudio), hw/camera (cameras),
// hw/host (the board's GPIO and I²C through periph's host drivers).
//
// Interfaces are small; optional capabilities are extra interfaces found by
// type assertion (for example Primer on an AudioSink).
package hw

import (
	"errors"
	"fmt"
	"time"

	"github.com/robot-agent/robot-agent/device"
)

// Errors shared by device implementations.
var (
	// ErrClosed is returned by Read/Write after Close.
	ErrClosed = errors.New("hw: device closed")
	// ErrNotBuiltIn is returned by stubs for support that needs cgo or a
	// build tag this binary was built without.
	// It is device.ErrNotBuiltIn, shared with packages that do not
	// import hw (codec/h264).
	ErrNotBuiltIn = device.ErrNotBuiltIn
	// ErrNoDevice is returned when a named device does not exist (now).
	ErrNoDevice = errors.New("hw: no such device")
	// ErrDeviceLost is returned when an open device disappears (unplugged).
	ErrDeviceLost = errors.New("hw: device lost")
)

// AudioFormat describes interleaved PCM16 audio as a device or stream has it.
type AudioFormat struct {
	SampleRate int // frames per second
	Channels   int
}

func (f AudioFormat) String() string { return fmt.Sprintf("%d Hz x %d ch", f.SampleRate, f.Channels) }

// Uplink and downlink formats fixed by protocol v1.
var (
	MicFormat = AudioFormat{SampleRate: 16000, Channels: 1}
	TTSFormat = AudioFormat{SampleRate: 24000, Channels: 1}
)

// AudioSource is a microphone. Read blocks until len(dst) samples
// (interleaved, Format().Channels per frame) have been captured, paced by
// the device, and returns how many it wrote. Read is called from one
// goroutine only (the capture pump); Close may be called from any goroutine
// and makes a blocked Read return ErrClosed.
//
// Buffer ownership: dst belongs to the caller; the source never retains it.
type AudioSource interface {
	Format() AudioFormat
	Read(dst []int16) (int, error)
	Close() error
}

// AudioSink is a speaker. Write blocks until the device has accepted all of
// p (paced by the device clock). Write is called from one goroutine only
// (the playback pump); Close may be called from any goroutine.
//
// Buffer ownership: p belongs to the caller and may be reused as soon as
// Write returns.
type AudioSink interface {
	Format() AudioFormat
	Write(p []int16) error
	Close() error
}

// Periodic is an optional capability of a sink: the device period in frames
// (how many frames Write should be handed at once for lowest latency).
type Periodic interface {
	PeriodFrames() int
}

// FindSink returns capability T (Flusher, LatencyReporter, Periodic, ...)
// of sink or of the sinks it wraps: a decorator that does not implement T
// itself is looked through when it has an Unwrap() AudioSink method (at
// most 8 deep).
func FindSink[T any](sink AudioSink) (T, bool) {
	for range 8 {
		if t, ok := sink.(T); ok {
			return t, true
		}
		u, ok := sink.(interface{ Unwrap() AudioSink })
		if !ok {
			break
		}
		sink = u.Unwrap()
	}
	var zero T
	return zero, false
}

// SinkDecorator is embedded by a sink that wraps another (a gain stage, a
// tap): Format, Write and Close reach the sink below unless the embedder
// has its own, and the capabilities below stay reachable: through Unwrap
// (FindSink: Flusher, LatencyReporter, ...) and as Periodic, whose period
// it finds below (0 when there is none).
type SinkDecorator struct{ AudioSink }

// Unwrap returns the sink below.
func (d SinkDecorator) Unwrap() AudioSink { return d.AudioSink }

// PeriodFrames implements Periodic with the period of the sinks below.
func (d SinkDecorator) PeriodFrames() int {
	if p, ok := FindSink[Periodic](d.AudioSink); ok {
		return p.PeriodFrames()
	}
	return 0
}

// FindSource is FindSink for sources: capability T of src or of the
// sources it wraps (through Unwrap() AudioSource, at most 8 deep).
func FindSource[T any](src AudioSource) (T, bool) {
	for range 8 {
		if t, ok := src.(T); ok {
			return t, true
		}
		u, ok := src.(interface{ Unwrap() AudioSource })
		if !ok {
			break
		}
		src = u.Unwrap()
	}
	var zero T
	return zero, false
}

// Flusher is an optional capability of an AudioSink, used for barge-in:
// Flush discards every sample handed to Write before or during the call
// that the device has not played yet, fading what is playing to zero within
// 4 ms (no click). A Write running concurrently returns early without
// queuing the rest of its buffer. Writes that start after Flush returns play
// normally. Flush may be called from any goroutine, never blocks and never
// allocates; it returns the number of frames discarded.
type Flusher interface {
	Flush() int
}

// LatencyReporter is an optional capability of an AudioSource or AudioSink:
// the device-side delay of the stream, as last measured against the device
// clock (for PortAudio, from the callback's ADC/DAC times). For a sink: from
// the return of the last Write until its last sample reaches the DAC. For a
// source: from the ADC capturing the last sample returned by Read until Read
// returned it. The echo canceller aligns its far-end reference with this.
// Safe to call from any goroutine.
type LatencyReporter interface {
	DeviceLatency() time.Duration
}
