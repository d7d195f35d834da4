package portaudio

import (
	"math"
	"time"
)

// PortAudio's stream callback status flags (PaStreamCallbackFlags), as
// CallbackTiming.Flags carries them.
const (
	FlagInputUnderflow  = 0x1
	FlagInputOverflow   = 0x2
	FlagOutputUnderflow = 0x4
	FlagOutputOverflow  = 0x8
	FlagPrimingOutput   = 0x10
)

// CallbackTiming is one device callback as the C callback recorded it:
// when it started on CLOCK_MONOTONIC, PortAudio's time info on the stream's
// own clock, its status flags and the ring's state after it. The
// benchmark's other hand-off designs produce the same records.
type CallbackTiming struct {
	// Start is CLOCK_MONOTONIC at callback entry (time since boot).
	Start time.Duration
	// Current is PortAudio's timeInfo->currentTime, BufferTime its
	// outputBufferDacTime (output) or inputBufferAdcTime (input), seconds
	// on the stream's clock. Both 0 where the host API does not report them.
	Current, BufferTime float64
	// Frames in this callback.
	Frames int
	// Flags are PortAudio's status flags (Flag*).
	Flags uint32
	// Buffered is the ring's fill after the callback: output frames queued
	// for later callbacks, or input frames not yet read by Go.
	Buffered int
	// Dry is how many output frames the callback concealed because the ring
	// ran dry (Go side late): a different thing from a device underflow.
	Dry int
}

// DeviceDelay is how far the callback's buffer is from the converter: for
// output, from the callback until its first frame reaches the DAC
// (BufferTime - Current); for input, from the ADC capturing its first
// frame until the callback (Current - BufferTime). 0 when unknown or
// implausible (over 2 s).
func (t CallbackTiming) DeviceDelay(output bool) time.Duration {
	if t.Current == 0 && t.BufferTime == 0 {
		return 0
	}
	d := t.BufferTime - t.Current
	if !output {
		d = -d
	}
	if d < 0 || d > 2 || math.IsNaN(d) {
		return 0
	}
	return time.Duration(d * float64(time.Second))
}

// DeviceUnderflow reports a device-level underflow flagged by PortAudio in
// this callback's direction (output: the device played before the data
// was there; input: the device had no data for the callback).
func (t CallbackTiming) DeviceUnderflow(output bool) bool {
	if output {
		return t.Flags&FlagOutputUnderflow != 0
	}
	return t.Flags&FlagInputUnderflow != 0
}

// DeviceOverflow reports a device-level overflow flagged by PortAudio in
// this callback's direction (input: captured data was discarded).
func (t CallbackTiming) DeviceOverflow(output bool) bool {
	if output {
		return t.Flags&FlagOutputOverflow != 0
	}
	return t.Flags&FlagInputOverflow != 0
}

// Cadence measures how late each device callback started against the
// cadence the device clock implies: callback k should start at
// anchor + (frames before k)/rate. The anchor is the earliest start seen
// (callbacks cannot be early, only late), allowed to creep later by
// DriftPPM of elapsed time so that a device clock slower than the system
// clock does not read as growing lateness. Callbacks during the first
// Warmup of a stream (PortAudio primes the device buffer with a burst of
// callbacks) and those flagged as priming are not measured.
//
// Lateness is the delay the device side added before it even started the
// period; a callback that ran longer than its period shows as lateness of
// the next one. DAC jitter (output) is how far the spacing of successive
// DAC times strays from the period, on the stream's clock.
//
// After a device underflow (PortAudio's output-underflow or input-overflow
// flag) or a gap of more than a period in the buffer times, the device
// timeline has moved on without the stream: that callback is not measured
// and the next one starts a new anchor. Underflows are what the caller
// counts for those; lateness is measured between them.
//
// A Cadence is used by one goroutine.
type Cadence struct {
	rate     float64
	warmup   time.Duration
	driftPPM float64

	first    time.Duration
	started  bool
	anchored bool
	elapsed  float64 // seconds of frames before the current callback
	anchor   float64 // seconds (CLOCK_MONOTONIC) of a frame-0 callback on time
	lastT    float64 // start of the last measured callback, seconds
	prevBuf  float64 // BufferTime of the previous callback
	prevLen  float64 // its length in seconds
	havePrev bool
}

// Default Cadence parameters.
const (
	DefaultCadenceWarmup = 250 * time.Millisecond
	DefaultDriftPPM      = 1000
)

// NewCadence returns a Cadence for a stream at rate frames per second.
func NewCadence(rate int) *Cadence {
	return &Cadence{rate: float64(rate), warmup: DefaultCadenceWarmup, driftPPM: DefaultDriftPPM}
}

// Reset starts over for a new stream.
func (c *Cadence) Reset() {
	*c = Cadence{rate: c.rate, warmup: c.warmup, driftPPM: c.driftPPM}
}

// Observe takes the next callback of the stream and returns its start
// lateness and (if both this and the previous callback carry a buffer
// time) its DAC/ADC spacing jitter; ok is false during warm-up.
func (c *Cadence) Observe(t CallbackTiming) (late, jitter time.Duration, hasJitter, ok bool) {
	if !c.started {
		c.started, c.first = true, t.Start
	}
	start := t.Start.Seconds()
	x := start - c.elapsed
	c.elapsed += float64(t.Frames) / c.rate
	bufLen := float64(t.Frames) / c.rate
	gap := false
	if t.BufferTime != 0 && c.havePrev {
		j := (t.BufferTime - c.prevBuf) - c.prevLen
		if math.Abs(j) < 1 {
			jitter, hasJitter = time.Duration(math.Abs(j)*float64(time.Second)), true
		}
		gap = j > c.prevLen
	}
	c.prevBuf, c.prevLen, c.havePrev = t.BufferTime, bufLen, t.BufferTime != 0
	if t.Start-c.first < c.warmup || t.Flags&FlagPrimingOutput != 0 {
		return 0, jitter, hasJitter, false
	}
	if gap || t.Flags&(FlagOutputUnderflow|FlagInputOverflow) != 0 {
		// The device's timeline moved on without this stream (an
		// underflow, counted by the caller, or a gap of more than a
		// period in the buffer times): the old cadence no longer applies.
		c.anchored = false
		return 0, jitter, hasJitter, false
	}
	if !c.anchored {
		c.anchored, c.anchor, c.lastT = true, x, start
	}
	c.anchor += (start - c.lastT) * c.driftPPM / 1e6
	c.lastT = start
	if x < c.anchor {
		c.anchor = x
	}
	return time.Duration((x - c.anchor) * float64(time.Second)), jitter, hasJitter, true
}
