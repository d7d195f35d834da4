package playback

import (
	"runtime"
	"sync"
	"testing"
)

// BenchmarkRingPushPop20ms pushes one 20 ms frame (480 samples) into the
// ring and pops it out again: the jitter buffer's per-frame cost.
func BenchmarkRingPushPop20ms(b *testing.B) {
	r, err := NewRing(256, 480)
	if err != nil {
		b.Fatal(err)
	}
	frame := make([]int16, 480)
	dst := make([]int16, 480)
	for i := range frame {
		frame[i] = int16(i)
	}
	b.ReportAllocs()
	b.SetBytes(2 * 480)
	for b.Loop() {
		r.Push(frame, 1, 0, 0)
		if n, ok := r.Pop(dst); !ok || n != 480 {
			b.Fatal("pop failed")
		}
	}
}

// BenchmarkChanPooledFrames20ms is the baseline: the same frame through a
// buffered channel of *[480]int16 taken from and returned to a sync.Pool.
func BenchmarkChanPooledFrames20ms(b *testing.B) {
	pool := sync.Pool{New: func() any { return new([480]int16) }}
	ch := make(chan *[480]int16, 256)
	frame := make([]int16, 480)
	dst := make([]int16, 480)
	for i := range frame {
		frame[i] = int16(i)
	}
	b.ReportAllocs()
	b.SetBytes(2 * 480)
	for b.Loop() {
		f := pool.Get().(*[480]int16)
		copy(f[:], frame)
		ch <- f
		g := <-ch
		if copy(dst, g[:]) != 480 {
			b.Fatal("short frame")
		}
		pool.Put(g)
	}
}

// BenchmarkPlayerPushFill20ms is the whole hot path for one 20 ms frame:
// PushPCM from little-endian bytes, then two 10 ms Fill periods.
func BenchmarkPlayerPushFill20ms(b *testing.B) {
	p, _, _ := newTestPlayer(b, Config{PrebufferMS: 1})
	chunk := le(counting(480, 1))
	out := make([]int16, 240)
	b.ReportAllocs()
	b.SetBytes(2 * 480)
	for b.Loop() {
		if err := p.PushPCM(1, chunk); err != nil {
			b.Fatal(err)
		}
		p.Fill(out)
		p.Fill(out)
	}
}

// BenchmarkRingSPSC20ms is the case the ring exists for: a producer
// goroutine pushes b.N frames while the benchmark goroutine pops them (each
// side yields when the ring is full or empty). Compare with
// BenchmarkChanSPSC20ms, measured the same way, and with the
// single-goroutine BenchmarkRingPushPop20ms.
func BenchmarkRingSPSC20ms(b *testing.B) {
	for _, grow := range []bool{false, true} {
		name := "prealloc"
		if grow {
			name = "growable"
		}
		b.Run(name, func(b *testing.B) {
			var r *Ring
			var err error
			if grow {
				r, err = NewGrowableRing(256, 480, 16, 0)
			} else {
				r, err = NewRing(256, 480)
			}
			if err != nil {
				b.Fatal(err)
			}
			frame := make([]int16, 480)
			dst := make([]int16, 480)
			b.ReportAllocs()
			b.SetBytes(2 * 480)
			b.ResetTimer()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < b.N; {
					if r.Push(frame, 1, 0, 0) == 0 {
						runtime.Gosched()
						continue
					}
					i++
				}
			}()
			for i := 0; i < b.N; {
				if _, ok := r.Pop(dst); !ok {
					runtime.Gosched()
					continue
				}
				i++
			}
			<-done
		})
	}
}

// BenchmarkChanSPSC20ms: the channel alternative across two goroutines,
// frames from a sync.Pool.
func BenchmarkChanSPSC20ms(b *testing.B) {
	pool := sync.Pool{New: func() any { return new([480]int16) }}
	ch := make(chan *[480]int16, 256)
	frame := make([]int16, 480)
	dst := make([]int16, 480)
	b.ReportAllocs()
	b.SetBytes(2 * 480)
	b.ResetTimer()
	go func() {
		for range b.N {
			f := pool.Get().(*[480]int16)
			copy(f[:], frame)
			ch <- f
		}
	}()
	for range b.N {
		g := <-ch
		copy(dst, g[:])
		pool.Put(g)
	}
}
