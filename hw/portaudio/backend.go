package portaudio

import "time"

// backend is the PortAudio library as the Host uses it; tests substitute a
// fake. All methods are called from the Host's supervisor (or under its
// lock), never concurrently.
type backend interface {
	// initialize and terminate bracket device enumeration: PortAudio only
	// rescans devices in initialize. terminate is only called when no
	// stream is open.
	initialize() error
	terminate() error
	devices() ([]Device, error)
	// newRing allocates the buffer a stream's callback exchanges audio
	// through: frames capacity (a power of two) of channels-sample frames.
	// Output rings start each (re)started stream with lead frames of
	// silence and fade over fade frames.
	newRing(output bool, frames, channels, fade, lead int) (ring, error)
	// open opens (not starts) a stream on d whose callback uses r.
	open(d Device, output bool, p streamParams, r ring) (stream, error)
	// fingerprint summarises the system's sound devices cheaply (without
	// PortAudio); a change means a rescan may find new devices. "" when
	// unknown.
	fingerprint() string
}

type streamParams struct {
	rate, channels int
	periodFrames   int
	latency        time.Duration
	// realtimePriority asks for SCHED_FIFO at this priority on the
	// callback thread (0: normal scheduling). Best effort: the result is
	// in ringStats.rtResult after the first callback.
	realtimePriority int
}

// stream is an open PortAudio stream.
type stream interface {
	start() error
	// close stops and closes the stream; no callback runs after it returns.
	close() error
	// latency is the device latency PortAudio reports for the open stream.
	latency() time.Duration
}

// ring is the lock-free buffer between Go and a stream callback (C memory
// in the real backend). For output rings Go is the producer (write), for
// input rings the consumer (read); the callback is the other side.
type ring interface {
	// write appends frames of interleaved samples (len(p)/channels frames)
	// tagged with flush generation gen and returns how many frames fitted.
	write(p []int16, gen uint32) int
	// read takes up to len(p)/channels frames and returns how many.
	read(p []int16) int
	// buffered is the number of frames published and not yet consumed.
	buffered() int
	// flush (any goroutine) makes the callback fade out and drop every
	// frame written under an older generation.
	flush()
	flushGen() uint32
	// prime arms lead frames of silence for the next start (stream stopped).
	prime()
	// drop discards buffered input (consumer side).
	drop()
	stats() ringStats
	// timings copies the callback records not yet taken into dst and
	// returns how many, and how many were overwritten before they could be
	// taken (supervisor goroutine only).
	timings(dst []CallbackTiming) (n int, lost uint64)
	// last returns the newest callback record and the current time on the
	// clock of its Start; ok is false before the first callback. Any
	// goroutine.
	last() (t CallbackTiming, now time.Duration, ok bool)
	// free releases the ring; only after its stream is closed.
	free()
}

type ringStats struct {
	callbacks, underrunCallbacks, underrunFrames, overrunFrames, xruns uint64
	// rtResult is the callback thread's real-time request: 0 none (yet),
	// 1 granted, -errno refused.
	rtResult int32
}
