// Package hwtest holds conformance tests for implementations of the hw
// device seams, in the spirit of periph.io's conntest: every implementation,
// simulated or real, runs the same checks of the interface contract.
//
//	func TestMicConformance(t *testing.T) {
//		clk := clock.NewFake()
//		clk.SetAutoAdvance(true)
//		hwtest.TestAudioSource(t, func() hw.AudioSource {
//			m, _ := sim.NewMic(sim.MicConfig{}, clk)
//			return m
//		}, clk)
//	}
//
// The optional clock is the one driving the device; pacing is measured on
// it. It must move on its own while the device sleeps: a clock.Real, or a
// clock.Fake with auto-advance. Without it the real clock is used, as for
// hardware. Checks against real time (Close unblocking) use wall-clock
// timeouts generous enough for a loaded 2-core board.
//
// # Concurrency
//
// The functions run subtests sequentially; each calls the constructor for a
// fresh device and closes it.
package hwtest

import (
	"errors"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// Tolerances on pacing: streaming one second must take between
// pacingMin and pacingMax on the device clock. The lower bound allows for
// audio a real device buffers ahead (sources) or accepts ahead (sinks).
const (
	pacingTotal = time.Second
	pacingMin   = 700 * time.Millisecond
	pacingMax   = 1600 * time.Millisecond
	// A Read/Write of blockLen must be interrupted by Close well before it
	// would end on its own.
	blockLen      = 2 * time.Second
	unblockWithin = 1 * time.Second
)

func pickClock(clk []clock.Clock) clock.Clock {
	if len(clk) > 0 && clk[0] != nil {
		return clk[0]
	}
	return clock.NewReal()
}

func checkFormat(t *testing.T, f hw.AudioFormat) bool {
	t.Helper()
	if f.SampleRate < 8000 || f.SampleRate > 192000 || f.Channels < 1 || f.Channels > 8 {
		t.Errorf("Format() = %v, want 8000..192000 Hz and 1..8 channels", f)
		return false
	}
	return true
}

// samplesFor returns the interleaved sample count for d of audio in f.
func samplesFor(f hw.AudioFormat, d time.Duration) int {
	return int(int64(f.SampleRate)*int64(d)/int64(time.Second)) * f.Channels
}

// TestAudioSource checks that sources made by newSource honour the
// hw.AudioSource contract: a valid Format; Read fills exactly the requested
// number of samples; reading paces with the clock; Close makes a blocked
// Read return hw.ErrClosed; Read after Close fails with hw.ErrClosed; Close
// twice does not panic.
func TestAudioSource(t *testing.T, newSource func() hw.AudioSource, clk ...clock.Clock) {
	c := pickClock(clk)
	open := func(t *testing.T) hw.AudioSource {
		t.Helper()
		s := newSource()
		if s == nil {
			t.Fatal("newSource returned nil")
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	t.Run("Format", func(t *testing.T) {
		checkFormat(t, open(t).Format())
	})

	t.Run("ReadFull", func(t *testing.T) {
		s := open(t)
		f := s.Format()
		if !checkFormat(t, f) {
			return
		}
		for _, frames := range []int{1, 7, f.SampleRate / 100, f.SampleRate / 50, f.SampleRate / 16} {
			dst := make([]int16, frames*f.Channels)
			n, err := s.Read(dst)
			if err != nil || n != len(dst) {
				t.Errorf("Read(%d samples) = %d, %v; want %d, nil", len(dst), n, err, len(dst))
			}
		}
	})

	t.Run("Pacing", func(t *testing.T) {
		s := open(t)
		f := s.Format()
		if !checkFormat(t, f) {
			return
		}
		dst := make([]int16, samplesFor(f, 20*time.Millisecond))
		blocks := int(pacingTotal / (20 * time.Millisecond))
		start := c.Mono()
		for range blocks {
			if n, err := s.Read(dst); err != nil || n != len(dst) {
				t.Fatalf("Read = %d, %v", n, err)
			}
		}
		if el := c.Mono() - start; el < pacingMin || el > pacingMax {
			t.Errorf("reading %v of audio took %v on the clock, want %v..%v", pacingTotal, el, pacingMin, pacingMax)
		}
	})

	t.Run("CloseUnblocksRead", func(t *testing.T) {
		s := open(t)
		f := s.Format()
		if !checkFormat(t, f) {
			return
		}
		dst := make([]int16, samplesFor(f, blockLen))
		started := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			close(started)
			for {
				if _, err := s.Read(dst); err != nil {
					done <- err
					return
				}
			}
		}()
		<-started
		time.Sleep(50 * time.Millisecond) // let Read block
		if err := s.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, hw.ErrClosed) {
				t.Errorf("blocked Read returned %v after Close, want hw.ErrClosed", err)
			}
		case <-time.After(unblockWithin):
			t.Fatalf("Read of %v still blocked %v after Close", blockLen, unblockWithin)
		}
	})

	t.Run("ReadAfterClose", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		f := s.Format()
		dst := make([]int16, max(f.Channels, 1)*160)
		if n, err := s.Read(dst); !errors.Is(err, hw.ErrClosed) || n != 0 {
			t.Errorf("Read after Close = %d, %v; want 0, hw.ErrClosed", n, err)
		}
		s.Close() // must not panic
	})
}

// TestAudioSink checks that sinks made by newSink honour the hw.AudioSink
// contract: a valid Format; Write accepts whole blocks of various sizes;
// writing paces with the clock; Close makes a blocked Write return
// hw.ErrClosed; Write after Close fails with hw.ErrClosed; Close twice does
// not panic. It writes only silence.
func TestAudioSink(t *testing.T, newSink func() hw.AudioSink, clk ...clock.Clock) {
	c := pickClock(clk)
	open := func(t *testing.T) hw.AudioSink {
		t.Helper()
		s := newSink()
		if s == nil {
			t.Fatal("newSink returned nil")
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	t.Run("Format", func(t *testing.T) {
		checkFormat(t, open(t).Format())
	})

	t.Run("WriteFull", func(t *testing.T) {
		s := open(t)
		f := s.Format()
		if !checkFormat(t, f) {
			return
		}
		for _, frames := range []int{1, 7, f.SampleRate / 100, f.SampleRate / 50, f.SampleRate / 16} {
			if err := s.Write(make([]int16, frames*f.Channels)); err != nil {
				t.Errorf("Write(%d frames) = %v", frames, err)
			}
		}
	})

	t.Run("Pacing", func(t *testing.T) {
		s := open(t)
		f := s.Format()
		if !checkFormat(t, f) {
			return
		}
		p := make([]int16, samplesFor(f, 20*time.Millisecond))
		blocks := int(pacingTotal / (20 * time.Millisecond))
		start := c.Mono()
		for range blocks {
			if err := s.Write(p); err != nil {
				t.Fatalf("Write = %v", err)
			}
		}
		if el := c.Mono() - start; el < pacingMin || el > pacingMax {
			t.Errorf("writing %v of audio took %v on the clock, want %v..%v", pacingTotal, el, pacingMin, pacingMax)
		}
	})

	t.Run("CloseUnblocksWrite", func(t *testing.T) {
		s := open(t)
		f := s.Format()
		if !checkFormat(t, f) {
			return
		}
		p := make([]int16, samplesFor(f, blockLen))
		started := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			close(started)
			for {
				if err := s.Write(p); err != nil {
					done <- err
					return
				}
			}
		}()
		<-started
		time.Sleep(50 * time.Millisecond) // let Write block
		if err := s.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, hw.ErrClosed) {
				t.Errorf("blocked Write returned %v after Close, want hw.ErrClosed", err)
			}
		case <-time.After(unblockWithin):
			t.Fatalf("Write of %v still blocked %v after Close", blockLen, unblockWithin)
		}
	})

	t.Run("WriteAfterClose", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		f := s.Format()
		if err := s.Write(make([]int16, max(f.Channels, 1)*160)); !errors.Is(err, hw.ErrClosed) {
			t.Errorf("Write after Close = %v, want hw.ErrClosed", err)
		}
		s.Close() // must not panic
	})
}
