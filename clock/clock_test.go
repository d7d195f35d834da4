package clock

import (
	"context"
	"testing"
	"time"
)

func TestFakeTimersAndMono(t *testing.T) {
	f := NewFake()
	if f.Mono() != 0 {
		t.Fatal("fake clock does not start at Mono 0")
	}
	tm := f.NewTimer(10 * time.Millisecond)
	f.Advance(9 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case <-tm.C():
	default:
		t.Fatal("timer did not fire at its deadline")
	}
	tm.Reset(5 * time.Millisecond)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reported false")
	}
	f.Advance(time.Second)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if f.Mono() != 1010*time.Millisecond {
		t.Fatalf("Mono = %v", f.Mono())
	}
	f.SetAutoAdvance(true)
	f.Sleep(time.Second)
	if f.Mono() != 2010*time.Millisecond {
		t.Fatalf("auto-advance Sleep: Mono = %v", f.Mono())
	}
}

func TestRealMonoIsMonotonic(t *testing.T) {
	r := NewReal()
	a := r.Mono()
	r.Sleep(time.Millisecond)
	if b := r.Mono(); b <= a {
		t.Fatalf("Mono went from %v to %v", a, b)
	}
}

func TestSleepContext(t *testing.T) {
	f := NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- SleepContext(ctx, f, time.Second) }()
	for {
		f.mu.Lock()
		n := len(f.timers)
		f.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.Advance(time.Second)
	if !<-done {
		t.Fatal("full sleep reported interrupted")
	}
	go func() { done <- SleepContext(ctx, f, time.Hour) }()
	cancel()
	if <-done {
		t.Fatal("cancelled sleep reported complete")
	}
	if SleepContext(ctx, f, 0) {
		t.Fatal("zero sleep on a done context reported true")
	}
}
