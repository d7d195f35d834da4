package clock

import (
	"errors"
	"sync"
	"time"
)

// ErrPacerClosed is returned by Pacer.WaitUntil after Close.
var ErrPacerClosed = errors.New("clock: pacer closed")

// Pacer sleeps on a Clock until absolute deadlines (Mono), so that a
// device paced block by block does not drift, and lets Close interrupt a
// wait from another goroutine — which a plain Clock.Sleep (in particular
// Fake's) cannot. Simulated devices use it.
//
// # Concurrency
//
// One goroutine calls WaitUntil; Close and Closed may be called from any
// goroutine. The sleeping happens on a helper goroutine started on the
// first wait that needs it; it exits on Close.
type Pacer struct {
	clk     Clock
	req     chan time.Duration // deadline, Mono
	ack     chan struct{}
	done    chan struct{} // closed by Close
	once    sync.Once
	started bool // owned by the waiting goroutine
}

// NewPacer returns a pacer on clk.
func NewPacer(clk Clock) *Pacer {
	return &Pacer{clk: clk, req: make(chan time.Duration), ack: make(chan struct{}, 1), done: make(chan struct{})}
}

// WaitUntil blocks until clk.Mono() >= deadline, or returns ErrPacerClosed
// once the pacer is closed. It never allocates.
func (p *Pacer) WaitUntil(deadline time.Duration) error {
	if p.Closed() {
		return ErrPacerClosed
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
		return ErrPacerClosed
	}
	select {
	case <-p.ack:
		return nil
	case <-p.done:
		return ErrPacerClosed
	}
}

func (p *Pacer) loop() {
	for {
		select {
		case dl := <-p.req:
			// Never Sleep a non-positive duration: a Fake clock with
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

// Close ends any wait in progress and every later one. Idempotent.
func (p *Pacer) Close() { p.once.Do(func() { close(p.done) }) }

// Closed reports whether Close was called.
func (p *Pacer) Closed() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
