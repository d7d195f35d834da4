package aec

import (
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
)

// refRig plays 10 ms blocks, each holding one constant value (its number
// times 100), with the clock advancing by a block per call, and checks
// where the reference placed them.
type refRig struct {
	t   *testing.T
	clk *clock.Fake
	ref *Reference
	k   int
	at  time.Duration // true DAC time of the next block
}

const blockMS = 10

func newRefRig(t *testing.T) *refRig {
	clk := clock.NewFake()
	ref, err := NewReference(clk, Rate)
	if err != nil {
		t.Fatal(err)
	}
	return &refRig{t: t, clk: clk, ref: ref, at: time.Second}
}

// play plays n blocks whose timestamps are off the truth by err(i).
func (r *refRig) play(n int, err func(i int) time.Duration) {
	blk := make([]int16, Rate*blockMS/1000)
	for i := range n {
		r.k++
		for j := range blk {
			blk[j] = int16(100 * (r.k % 300))
		}
		r.ref.Played(blk, r.at+err(i))
		r.at += blockMS * time.Millisecond
		r.clk.Advance(blockMS * time.Millisecond)
	}
}

// valueAt is the reference's sample 5 ms into the block that truly played
// at time at.
func (r *refRig) valueAt(at time.Duration) int16 {
	got := make([]int16, 1)
	r.ref.Read(got, at+5*time.Millisecond)
	return got[0]
}

// lastBlockAt checks that the block played last is found at its true time.
func (r *refRig) placed() bool {
	want := int16(100 * (r.k % 300))
	v := r.valueAt(r.at - blockMS*time.Millisecond)
	return v > want-20 && v < want+20
}

func none(int) time.Duration { return 0 }

func TestReferenceIgnoresTimestampSpikes(t *testing.T) {
	for _, c := range []struct {
		spike  time.Duration
		blocks int
	}{{80 * time.Millisecond, 1}, {300 * time.Millisecond, 1}, {-80 * time.Millisecond, 3}, {-300 * time.Millisecond, 3}} {
		spike := c.spike
		r := newRefRig(t)
		r.play(50, none)
		// Blocks with a wild DAC time (one later, three earlier), then
		// the truth again.
		r.play(c.blocks, func(int) time.Duration { return spike })
		r.play(50, none)
		if !r.placed() || r.ref.Jumps() != 0 {
			t.Errorf("spike %v: placed right %v, re-anchorings %d; want the timeline kept", spike, r.placed(), r.ref.Jumps())
		}
	}
}

// A timeline anchored on a wrong first timestamp (the device latency before
// the first device callback is a fallback) is corrected in both
// directions once the device timestamps have disagreed for persistAfter.
func TestReferenceFollowsAPersistentOffset(t *testing.T) {
	for _, off := range []time.Duration{150 * time.Millisecond, -150 * time.Millisecond, 60 * time.Millisecond, -60 * time.Millisecond} {
		r := newRefRig(t)
		// The first block's timestamp is off by -off: the rest are right,
		// so the running count disagrees with them by off.
		r.play(1, func(int) time.Duration { return -off })
		r.play(int(persistAfter/(blockMS*time.Millisecond))+2, none)
		if !r.placed() || r.ref.Jumps() != 1 {
			t.Errorf("first anchor off by %v: placed right %v, re-anchorings %d; want corrected once", -off, r.placed(), r.ref.Jumps())
		}
		r.play(100, none)
		if !r.placed() || r.ref.Jumps() != 1 {
			t.Errorf("first anchor off by %v, 1 s later: placed right %v, re-anchorings %d", -off, r.placed(), r.ref.Jumps())
		}
	}
}

// A latency that jitters within the tolerance never moves the timeline
// (anchored on a right first timestamp, the running count keeps it right).
func TestReferenceKeepsItsTimelineUnderJitter(t *testing.T) {
	r := newRefRig(t)
	r.play(1, none)
	r.play(500, func(i int) time.Duration { return time.Duration((i*7919)%61-30) * time.Millisecond })
	if r.ref.Jumps() != 0 || !r.placed() {
		t.Fatalf("±30 ms jitter: %d re-anchorings, placed right %v", r.ref.Jumps(), r.placed())
	}
}
