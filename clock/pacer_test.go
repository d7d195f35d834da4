package clock

import (
	"errors"
	"testing"
	"time"
)

func TestPacerWaitsOnTheClockAndCloseInterrupts(t *testing.T) {
	f := NewFake()
	p := NewPacer(f)
	done := make(chan error, 1)
	go func() { done <- p.WaitUntil(50 * time.Millisecond) }()
	for f.Sleepers() == 0 {
		time.Sleep(time.Millisecond)
	}
	f.Advance(49 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("WaitUntil returned %v before its deadline", err)
	case <-time.After(20 * time.Millisecond):
	}
	f.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A deadline already past returns at once.
	if err := p.WaitUntil(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	go func() { done <- p.WaitUntil(time.Hour) }()
	for f.Sleepers() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Close()
	if err := <-done; !errors.Is(err, ErrPacerClosed) {
		t.Fatalf("wait after Close = %v, want ErrPacerClosed", err)
	}
	if !p.Closed() || !errors.Is(p.WaitUntil(0), ErrPacerClosed) {
		t.Fatal("pacer not closed")
	}
	p.Close() // idempotent
}
