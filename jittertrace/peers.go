package jittertrace

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/playback"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eec4)) }

// PlayerPlayout drives a real playback.Player on a fake clock, as one
// response (id 1).
type PlayerPlayout struct {
	P   *playback.Player
	clk *clock.Fake
	b   []byte
	t0  time.Duration
}

// NewPlayerPlayout returns a Player with cfg on its own fake clock.
func NewPlayerPlayout(cfg playback.Config) (*PlayerPlayout, error) {
	clk := clock.NewFake()
	p, err := playback.New(cfg, clk, nil, nil)
	if err != nil {
		return nil, err
	}
	return &PlayerPlayout{P: p, clk: clk, b: make([]byte, 0, 2*MaxFrameSamples), t0: -1}, nil
}

func (pp *PlayerPlayout) at(now time.Duration) {
	if pp.t0 < 0 {
		pp.t0 = now - pp.clk.Mono()
	}
	if d := now - pp.t0 - pp.clk.Mono(); d > 0 {
		pp.clk.Advance(d)
	}
}

// Push implements Playout.
func (pp *PlayerPlayout) Push(now time.Duration, pcm []int16) {
	pp.at(now)
	b := pp.b[:0]
	for _, v := range pcm {
		b = append(b, byte(v), byte(uint16(v)>>8))
	}
	_ = pp.P.PushPCM(1, b) // overflow is counted in Stats.Lost
}

// End implements Playout.
func (pp *PlayerPlayout) End(now time.Duration) { pp.at(now); pp.P.EndResponse(1) }

// Fill implements Playout.
func (pp *PlayerPlayout) Fill(now time.Duration, dst []int16) {
	pp.at(now)
	pp.P.Fill(dst)
	pp.P.DrainEvents(func(playback.Event) {})
}

// Counters implements Playout.
func (pp *PlayerPlayout) Counters() Counters {
	s := pp.P.Stats()
	return Counters{Source: s.Source, Concealed: s.Concealed, Stretched: s.Stretched, Lost: s.Lost, Underruns: s.Underruns, Peak: s.Peak}
}

// Fixed is a fixed playout delay, the classic fixed jitter buffer: sample
// k of the stream is played at first arrival + Delay + k/24000 s, whatever
// happens. Audio that is not there at its time is concealed with silence
// and dropped when it arrives (counted in Lost), so the delay never
// drifts. With the smallest Delay that keeps concealment under a bound
// (Oracle) it is the best fixed buffer for a trace, found with hindsight.
type Fixed struct {
	Delay   time.Duration
	q       []int16
	base    int64 // stream index of q[0]
	recv    int64 // samples received
	start   time.Duration
	started bool
	under   bool
	c       Counters
	pos     int64 // next stream index to play
}

// Push implements Playout.
func (f *Fixed) Push(now time.Duration, pcm []int16) {
	if f.recv == 0 {
		f.start = now + f.Delay
	}
	if drop := f.pos - f.base; drop > 1<<20 && drop <= int64(len(f.q)) {
		f.q = append(f.q[:0], f.q[drop:]...)
		f.base = f.pos
	}
	f.q = append(f.q, pcm...)
	f.recv += int64(len(pcm))
	f.c.Peak = max(f.c.Peak, f.recv-f.pos)
}

// End implements Playout.
func (f *Fixed) End(time.Duration) {}

// Fill implements Playout.
func (f *Fixed) Fill(now time.Duration, dst []int16) {
	if f.recv == 0 || now < f.start {
		clear(dst)
		return
	}
	under := false
	for i := range dst {
		if f.pos < f.recv {
			dst[i] = f.q[f.pos-f.base]
			f.c.Source++
		} else {
			dst[i] = 0
			under = true
			f.c.Concealed++
			f.c.Lost++ // this stream sample, arriving later, is skipped
		}
		f.pos++
	}
	if under && !f.under {
		f.c.Underruns++
	}
	f.under = under
}

// Counters implements Playout. Source counts stream positions passed
// (played or skipped), Lost the skipped ones.
func (f *Fixed) Counters() Counters {
	c := f.c
	c.Source = f.pos
	return c
}

// Oracle returns the smallest fixed delay (to 5 ms) whose replay of frames
// conceals at most maxConcealPct percent, and that replay's result.
func Oracle(frames []Frame, maxConcealPct float64, opt Options) (time.Duration, Result, error) {
	run := func(d time.Duration) (Result, error) {
		o := opt
		o.Out = nil
		return Replay(frames, &Fixed{Delay: d}, o)
	}
	lo, hi := time.Duration(0), 10*time.Second
	best, err := run(hi)
	if err != nil {
		return 0, Result{}, err
	}
	if best.ConcealedPct > maxConcealPct {
		return 0, Result{}, fmt.Errorf("jittertrace: oracle: even a %v buffer conceals %.2f%%", hi, best.ConcealedPct)
	}
	for hi-lo > 5*time.Millisecond {
		mid := (lo + hi) / 2
		r, err := run(mid)
		if err != nil {
			return 0, Result{}, err
		}
		if r.ConcealedPct <= maxConcealPct {
			hi, best = mid, r
		} else {
			lo = mid
		}
	}
	return hi, best, nil
}
