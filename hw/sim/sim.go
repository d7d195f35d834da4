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
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// durationOf returns the duration of frames at rate without overflowing for
// any realistic stream length.
func durationOf(frames int64, rate int) time.Duration {
	r := int64(rate)
	return time.Duration(frames/r)*time.Second + time.Duration(frames%r)*time.Second/time.Duration(r)
}

// pacer sleeps on the device clock until absolute deadlines, on a helper
// goroutine so that close can interrupt a wait.
type pacer struct {
	clk     clock.Clock
	req     chan time.Duration // deadline, clock.Mono
	ack     chan struct{}
	done    chan struct{} // closed by close
	once    sync.Once
	started bool // owned by the waiting goroutine
}

func newPacer(clk clock.Clock) *pacer {
	return &pacer{
		clk:  clk,
		req:  make(chan time.Duration),
		ack:  make(chan struct{}, 1),
		done: make(chan struct{}),
	}
}

// waitUntil blocks until clk.Mono() >= deadline or the pacer is closed (then
// it returns hw.ErrClosed). Only one goroutine may call it.
func (p *pacer) waitUntil(deadline time.Duration) error {
	select {
	case <-p.done:
		return hw.ErrClosed
	default:
	}
	if deadline-p.clk.Mono() <= 0 {
		return nil
	}
	if !p.started {
		p.started = true
		go p.loop()
	}
	select {
	case p.req <- deadline:
	case <-p.done:
		return hw.ErrClosed
	}
	select {
	case <-p.ack:
		return nil
	case <-p.done:
		return hw.ErrClosed
	}
}

func (p *pacer) loop() {
	for {
		select {
		case dl := <-p.req:
			// Never Sleep a non-positive duration: a fake clock with
			// auto-advance would move backwards.
			if d := dl - p.clk.Mono(); d > 0 {
				p.clk.Sleep(d)
			}
			select {
			case p.ack <- struct{}{}:
			case <-p.done:
				return
			}
		case <-p.done:
			return
		}
	}
}

func (p *pacer) close() { p.once.Do(func() { close(p.done) }) }

func (p *pacer) closed() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
