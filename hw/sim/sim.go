// Package sim provides simulated devices implementing the hw seams, driven by
// an injected clock.Clock so tests can run them faster than real time
// (clock.Fake with auto-advance) and reproduce them exactly.
//
//   - Mic is a 16 kHz mono hw.AudioSource playing a WAV file or a generated,
//     seeded speech-like script, followed by a low noise floor.
//   - Speaker is an hw.AudioSink that paces writes like a device, and can
//     record what it was given to a WAV file and/or memory, with the time
//     each block started playing.
//
// # Pacing
//
// Devices keep an absolute deadline (stream start + samples so far / rate)
// and sleep until it with clk.Sleep(deadline - clk.Mono()), so pacing does
// not drift however late the caller is. The sleep runs on a small helper
// goroutine per device (started on first use, ended by Close) so that Close
// can unblock a Read or Write even while a fake clock is not advancing;
// handing over to it takes two channel operations and no allocation.
//
// # Concurrency
//
// Read (Mic) and Write (Speaker) are called from one goroutine each. Close
// and the inspection methods (Sent, Produced, StartedAt, Samples, Blocks,
// ...) may be called from any goroutine. The devices take an uncontended
// mutex per Read/Write; they are simulations, not part of the real hot path.
package sim

import (
	"time"
)

// durationOf returns the duration of frames at rate without overflowing for
// any realistic stream length.
func durationOf(frames int64, rate int) time.Duration {
	r := int64(rate)
	return time.Duration(frames/r)*time.Second + time.Duration(frames%r)*time.Second/time.Duration(r)
}
