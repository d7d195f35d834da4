package jittertrace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Kinds of generated traces.
var Kinds = []string{"ethernet", "wifi", "busywifi", "lte", "stall2s", "burst4x", "burst10x"}

// GenConfig describes a generated trace.
type GenConfig struct {
	Kind     string        // one of Kinds
	Seed     uint64        // same seed, same trace
	Duration time.Duration // audio in the stream (default 10 min)
	FrameMS  int           // frame length (default 20 ms)
}

// Generate makes a deterministic synthetic trace. The gateway sends one
// frame every FrameMS in real time (bursts: Speed times faster, in
// replies of 5 minutes); each frame gets a network delay drawn from the
// kind's model, and the WebSocket delivers in order (a frame never
// arrives before the one sent before it).
//
//   - ethernet: 2 ms + exponential(0.3 ms).
//   - wifi: 4 ms + exponential(5 ms), 1 % of frames +20..60 ms.
//   - busywifi: 8 ms + exponential(12 ms), 2 % +20..80 ms, and every
//     5..15 s the link blocks for 200 ms (frames queue and arrive together).
//   - lte: 45 ms + exponential(10 ms), every 5..20 s a block of 100..400 ms.
//   - stall2s: wifi with one 2 s block at a random time in the middle.
//   - burst4x, burst10x: wifi delays; the gateway sends each 5-minute
//     reply at 4 (10) times real time, starting when the previous reply
//     would have finished playing.
func Generate(cfg GenConfig) ([]Frame, error) {
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Minute
	}
	if cfg.FrameMS == 0 {
		cfg.FrameMS = 20
	}
	if cfg.FrameMS < 1 || cfg.FrameMS > 1000 || cfg.Duration < time.Second || cfg.Duration > 24*time.Hour {
		return nil, fmt.Errorf("jittertrace: generate: FrameMS=%d or Duration=%v out of range", cfg.FrameMS, cfg.Duration)
	}
	if !slices.Contains(Kinds, cfg.Kind) {
		return nil, fmt.Errorf("jittertrace: generate: unknown kind %q (want one of %v)", cfg.Kind, Kinds)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6a1773))
	frame := time.Duration(cfg.FrameMS) * time.Millisecond
	n := int(cfg.Duration / frame)
	exp := func(mean time.Duration) time.Duration { return time.Duration(rng.ExpFloat64() * float64(mean)) }
	uni := func(a, b time.Duration) time.Duration { return a + time.Duration(rng.Float64()*float64(b-a)) }
	ms := time.Millisecond

	// Send times.
	send := make([]time.Duration, n)
	speed := 1.0
	switch cfg.Kind {
	case "burst4x":
		speed = 4
	case "burst10x":
		speed = 10
	}
	reply := int(5 * time.Minute / frame)
	for i := range send {
		k, j := i/reply, i%reply
		send[i] = time.Duration(k*reply)*frame + time.Duration(float64(time.Duration(j)*frame)/speed)
	}

	// Link blocks: [start, end) during which nothing is delivered.
	type block struct{ from, to time.Duration }
	var blocks []block
	total := send[n-1] + frame
	switch cfg.Kind {
	case "busywifi":
		for t := uni(5*time.Second, 15*time.Second); t < total; t += uni(5*time.Second, 15*time.Second) {
			blocks = append(blocks, block{t, t + 200*ms})
		}
	case "lte":
		for t := uni(5*time.Second, 20*time.Second); t < total; t += uni(5*time.Second, 20*time.Second) {
			blocks = append(blocks, block{t, t + uni(100*ms, 400*ms)})
		}
	case "stall2s":
		t := uni(total/3, 2*total/3)
		blocks = append(blocks, block{t, t + 2*time.Second})
	}

	out := make([]Frame, n)
	samples := cfg.FrameMS * SampleRate / 1000
	var prev time.Duration
	bi := 0
	for i := range out {
		var d time.Duration
		switch cfg.Kind {
		case "ethernet":
			d = 2*ms + exp(300*time.Microsecond)
		case "wifi", "stall2s", "burst4x", "burst10x":
			d = 4*ms + exp(5*ms)
			if rng.Float64() < 0.01 {
				d += uni(20*ms, 60*ms)
			}
		case "busywifi":
			d = 8*ms + exp(12*ms)
			if rng.Float64() < 0.02 {
				d += uni(20*ms, 80*ms)
			}
		case "lte":
			d = 45*ms + exp(10*ms)
		}
		at := send[i] + d
		for bi < len(blocks) && blocks[bi].to <= at {
			bi++
		}
		if bi < len(blocks) && at >= blocks[bi].from {
			at = blocks[bi].to + time.Duration(math.Abs(float64(exp(ms))))
		}
		at = max(at, prev)
		prev = at
		out[i] = Frame{Arrival: at, Samples: samples}
	}
	return out, nil
}
