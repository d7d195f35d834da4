package jittertrace

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/playback"
)

// Streams of shapes the shipped generators do not make: an outage of
// seconds, and a gateway that sends its audio in chunks larger than 20 ms.
// Both found defects (a delay kept for the rest of the stream; a level
// control that followed the chunks' saw-tooth); these tests fail without
// the fixes.

// shaped returns d of audio sent in real time in chunks of chunkMS, each
// arriving 30 ms + exp(5 ms) after it was sent; what is sent during
// [outAt, outAt+outLen) arrives when the outage ends.
func shaped(seed uint64, d time.Duration, chunkMS int, outAt, outLen time.Duration) []Frame {
	rng := rand.New(rand.NewPCG(seed, 0x5a4e))
	chunk := time.Duration(chunkMS) * time.Millisecond
	var out []Frame
	var prev time.Duration
	for sent := time.Duration(0); sent < d; sent += chunk {
		a := sent + 30*time.Millisecond + time.Duration(rng.ExpFloat64()*5*float64(time.Millisecond))
		if outLen > 0 && sent >= outAt && sent < outAt+outLen {
			a = max(a, outAt+outLen+30*time.Millisecond)
		}
		prev = max(prev, a)
		out = append(out, Frame{Arrival: prev, Samples: chunkMS * SampleRate / 1000})
	}
	return out
}

func replayAdaptive(t *testing.T, fr []Frame) Result {
	t.Helper()
	pl, err := NewPlayerPlayout(playback.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(fr, pl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An outage of seconds in the middle of a long stream: the backlog that
// arrives when the link comes back is delay the listener hears, and the
// player must take it out again by time-compression, whatever its length
// (before, a backlog above 2*MaxDelayMS, 4 s, was taken for a reply
// streamed ahead and the delay was kept to the end: growth 5 s and 8 s for
// the 5 s and 8 s outages). Nothing is dropped.
func TestLongOutageIsCaughtUp(t *testing.T) {
	for _, out := range []time.Duration{2 * time.Second, 5 * time.Second, 8 * time.Second} {
		fr := shaped(1, 4*time.Minute, 20, time.Minute, out)
		r := replayAdaptive(t, fr)
		t.Logf("outage %v: %v", out, r)
		if r.Lost != 0 {
			t.Errorf("outage %v: lost %d samples", out, r.Lost)
		}
		if r.Growth > 20*time.Millisecond {
			t.Errorf("outage %v: latency growth %v: the outage's delay was kept", out, r.Growth)
		}
		if r.P50 > 100*time.Millisecond {
			t.Errorf("outage %v: delay p50 %v", out, r.P50)
		}
	}
}

// A gateway that sends 100 ms to 2 s chunks in real time, with a few ms of
// jitter: the buffer level saw-tooths by a chunk, which is not a level
// error. Before, the player chased the saw: it stretched 7–24 % of the
// audio and, from 500 ms chunks on, underran at nearly every chunk
// (5.5 % concealed at 500 ms). 20 ms chunks (every shipped trace) are
// unchanged.
func TestLargeChunksPlaySmoothly(t *testing.T) {
	for _, ms := range []int{100, 250, 500, 1000, 2000} {
		for seed := uint64(1); seed <= 2; seed++ {
			r := replayAdaptive(t, shaped(seed, 3*time.Minute, ms, 0, 0))
			t.Logf("%d ms chunks, seed %d: %v", ms, seed, r)
			if r.Lost != 0 {
				t.Errorf("%d ms chunks: lost %d samples", ms, r.Lost)
			}
			if r.ConcealedPct > 0.3 {
				t.Errorf("%d ms chunks, seed %d: concealed %.2f%%", ms, seed, r.ConcealedPct)
			}
			if r.StretchedPct > 1.5 {
				t.Errorf("%d ms chunks, seed %d: stretched %.2f%%: the level control follows the chunks", ms, seed, r.StretchedPct)
			}
			if r.P95 > 150*time.Millisecond {
				t.Errorf("%d ms chunks, seed %d: delay p95 %v", ms, seed, r.P95)
			}
		}
	}
}
