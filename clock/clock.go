// Package clock provides an injectable monotonic clock.
//
// Every timestamp robot-agent puts on the wire (mic frames, video frames,
// state events) comes from one Clock so that the gateway can line streams up.
// Production code uses Real; tests use Fake and move time by hand.
//
// # Concurrency
//
// Real and Fake are safe for use by any number of goroutines.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock is the time source used by devices, pumps and the uplink.
type Clock interface {
	// Now returns the current time. Its monotonic reading is what Mono uses.
	Now() time.Time
	// Mono returns the time elapsed since the clock's epoch (its creation).
	// Wire timestamps are Mono in microseconds.
	Mono() time.Duration
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
	// Sleep blocks for d.
	Sleep(d time.Duration)
}

// Timer is the subset of time.Timer the agent uses.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped it.
	Stop() bool
	// Reset changes the timer to expire after d.
	Reset(d time.Duration)
}

// Real is the system clock. The zero value is not usable; call NewReal.
type Real struct{ epoch time.Time }

// NewReal returns the system clock with its epoch at now.
func NewReal() *Real { return &Real{epoch: time.Now()} }

// Now implements Clock.
func (r *Real) Now() time.Time { return time.Now() }

// Mono implements Clock.
func (r *Real) Mono() time.Duration { return time.Since(r.epoch) }

// Sleep implements Clock.
func (r *Real) Sleep(d time.Duration) { time.Sleep(d) }

// NewTimer implements Clock.
func (r *Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time   { return t.t.C }
func (t realTimer) Stop() bool            { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) { t.t.Reset(d) }

// Fake is a manually advanced clock for tests. Time only moves on Advance
// (or on Sleep, which advances the clock itself when AutoAdvance is set).
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	epoch  time.Time
	timers []*fakeTimer
	// sleepers wake when now reaches their deadline.
	sleepers []sleeper
	auto     bool
}

type sleeper struct {
	at time.Time
	ch chan struct{}
}

// NewFake returns a fake clock starting at a fixed instant.
func NewFake() *Fake {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &Fake{now: t0, epoch: t0}
}

// SetAutoAdvance makes Sleep advance the clock instead of blocking. Useful
// for driving simulated devices as fast as the CPU allows.
func (f *Fake) SetAutoAdvance(on bool) {
	f.mu.Lock()
	f.auto = on
	f.mu.Unlock()
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Mono implements Clock.
func (f *Fake) Mono() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now.Sub(f.epoch)
}

// Sleep implements Clock. It blocks until another goroutine advances the
// clock past the deadline, unless auto-advance is on.
func (f *Fake) Sleep(d time.Duration) {
	f.mu.Lock()
	if f.auto {
		f.mu.Unlock()
		f.Advance(d)
		return
	}
	if d <= 0 {
		f.mu.Unlock()
		return
	}
	s := sleeper{at: f.now.Add(d), ch: make(chan struct{})}
	f.sleepers = append(f.sleepers, s)
	f.mu.Unlock()
	<-s.ch
}

// Sleepers reports how many goroutines are blocked in Sleep; tests use it to
// wait until a device is parked before advancing.
func (f *Fake) Sleepers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sleepers)
}

// Advance moves the clock forward by d, firing timers and waking sleepers
// whose deadlines have passed.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	keep := f.sleepers[:0]
	var wake []chan struct{}
	for _, s := range f.sleepers {
		if !s.at.After(now) {
			wake = append(wake, s.ch)
		} else {
			keep = append(keep, s)
		}
	}
	f.sleepers = keep
	var fire []*fakeTimer
	kt := f.timers[:0]
	for _, t := range f.timers {
		if t.active && !t.at.After(now) {
			t.active = false
			fire = append(fire, t)
		} else if t.active {
			kt = append(kt, t)
		}
	}
	f.timers = kt
	f.mu.Unlock()
	for _, ch := range wake {
		close(ch)
	}
	for _, t := range fire {
		select {
		case t.c <- now:
		default:
		}
	}
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), at: f.now.Add(d), active: true}
	f.timers = append(f.timers, t)
	return t
}

type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	at     time.Time
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.at = t.f.now.Add(d)
	if !t.active {
		t.active = true
		t.f.timers = append(t.f.timers, t)
	}
}

// SleepContext sleeps d on c, or less if ctx ends first; it reports whether
// the full duration passed (false: ctx is done). d <= 0 returns at once.
func SleepContext(ctx context.Context, c Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
