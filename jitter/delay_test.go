package jitter

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// feed pushes n 20 ms chunks (480 samples at 24 kHz) sent in real time
// times speed, with network delay drawn by delay.
func feed(m *Manager, n int, speed float64, delay func() time.Duration) {
	var prev time.Duration
	for i := range n {
		sent := time.Duration(float64(time.Duration(i)*20*time.Millisecond) / speed)
		at := max(prev, sent+delay())
		prev = at
		m.Arrive(at, int64(i)*480)
	}
}

func TestTargetTracksJitterQuantile(t *testing.T) {
	tests := []struct {
		name   string
		jitter time.Duration // uniform 0..jitter
		lo, hi time.Duration
	}{
		{"none", 0, 0, 5 * time.Millisecond},
		{"40 ms", 40 * time.Millisecond, 30 * time.Millisecond, 45 * time.Millisecond},
		{"150 ms", 150 * time.Millisecond, 120 * time.Millisecond, 160 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			feed(m, 3000, 1, func() time.Duration { return time.Duration(rng.Float64() * float64(tt.jitter)) })
			got := time.Duration(m.TargetSamples()) * time.Second / 24000
			if got < tt.lo || got > tt.hi {
				t.Errorf("target %v, want in [%v, %v]", got, tt.lo, tt.hi)
			}
			if a := m.Ahead(); a > 50*time.Millisecond {
				t.Errorf("a real-time stream reported %v ahead", a)
			}
		})
	}
}

func TestForgetsOldJitter(t *testing.T) {
	m, _ := New(Config{})
	rng := rand.New(rand.NewPCG(3, 4))
	feed(m, 3000, 1, func() time.Duration { return time.Duration(rng.Float64() * float64(200*time.Millisecond)) })
	high := m.TargetSamples()
	m.Reset()
	// The default memory is ~400 s (0.99995 per 20 ms chunk; plain
	// averaging over the first 20 000 chunks): the old spell's mass falls
	// under the 1.5 % tail after ~21 minutes of calm.
	feed(m, 66000, 1, func() time.Duration { return 0 }) // 22 quiet minutes
	if low := m.TargetSamples(); low >= high/4 {
		t.Errorf("target %d samples after 22 quiet minutes, %d before: not forgetting", low, high)
	}
	fast, _ := New(Config{ForgetFactor: 0.9993}) // ~28 s memory forgets in two minutes
	feed(fast, 3000, 1, func() time.Duration { return time.Duration(rng.Float64() * float64(200*time.Millisecond)) })
	fast.Reset()
	feed(fast, 6000, 1, func() time.Duration { return 0 })
	if low := fast.TargetSamples(); low >= high/4 {
		t.Errorf("ForgetFactor 0.9993: target %d samples after two quiet minutes, %d before", low, high)
	}
}

func TestAheadOfRealTime(t *testing.T) {
	m, _ := New(Config{})
	feed(m, 500, 4, func() time.Duration { return 3 * time.Millisecond })
	if a := m.Ahead(); a < 500*time.Millisecond {
		t.Errorf("4x stream: ahead %v, want > 500 ms (half the 2 s window at 4x is 750 ms)", a)
	}
	if m.TargetSamples() != 0 {
		t.Errorf("4x stream: target %d, want 0 (never late)", m.TargetSamples())
	}
}

func TestTailScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	target := func(scale float64) int64 {
		m, _ := New(Config{})
		m.SetTailScale(scale)
		feed(m, 3000, 1, func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond)) })
		return m.TargetSamples()
	}
	wide, base, narrow := target(2), target(1), target(0.25)
	if !(wide < base && base < narrow) {
		t.Errorf("targets with tail scale 2, 1, 0.25: %d, %d, %d samples; want increasing", wide, base, narrow)
	}
	m, _ := New(Config{})
	m.SetTailScale(math.NaN()) // clamped, not propagated
	feed(m, 100, 1, func() time.Duration { return 5 * time.Millisecond })
	if m.TargetSamples() < 0 {
		t.Error("NaN tail scale broke the target")
	}
}

func TestNoAllocs(t *testing.T) {
	m, _ := New(Config{})
	var now time.Duration
	var pos int64
	if a := testing.AllocsPerRun(500, func() {
		now += 20 * time.Millisecond
		pos += 480
		m.Arrive(now, pos)
	}); a != 0 {
		t.Errorf("Arrive allocs = %v", a)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{Quantile: 1.5}, {ForgetFactor: 1}, {BucketMS: -1}, {WindowMS: -2}, {SampleRate: 10}} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", c, err)
		}
	}
}
