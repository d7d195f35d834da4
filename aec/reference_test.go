package aec

import (
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
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

// lateSink is a blocking sink (Write returns when its block has played)
// whose Write returns late by the amount in late: a loaded machine. It
// checks whether the reference held the block while it played.
type lateSink struct {
	clk     *clock.Fake
	ref     *Reference
	late    time.Duration
	start   time.Duration // where the next block starts (NextStart)
	inTime  bool          // the reference held the last block while it played
	pending bool          // the reference announced it (Reference.behind)
}

func (s *lateSink) Format() hw.AudioFormat { return hw.AudioFormat{SampleRate: Rate, Channels: 1} }
func (s *lateSink) Close() error           { return nil }
func (s *lateSink) Write(p []int16) error {
	d := time.Duration(len(p)) * time.Second / Rate
	s.start = s.clk.Mono()
	got := make([]int16, 1)
	s.ref.Read(got, s.start+d/2)
	s.inTime = got[0] == p[len(p)/2]
	s.pending = s.ref.behind(s.ref.index(s.start+d), s.start, d)
	s.clk.Advance(d + s.late)
	return nil
}

type lateStarter struct{ *lateSink }

func (s lateStarter) NextStart() time.Duration { return s.clk.Mono() }

// A blocking sink's Write that returns late must not move the reference
// later than the echo: with NextStart the Tap places the block where it
// plays before the device has it; with only the return time it is off by
// the lateness (what made the simulated robot interrupt itself on a loaded
// CI machine), and until then the reference is behind the echo: it says
// so (Reference.behind) while the block is in the device.
func TestTapPlacesLateReturningWritesWhereTheyPlayed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		starter bool
	}{{"next start", true}, {"return time only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake()
			clk.Advance(time.Second)
			ref, err := NewReference(clk, Rate)
			if err != nil {
				t.Fatal(err)
			}
			ls := &lateSink{clk: clk, ref: ref, late: 80 * time.Millisecond}
			var sink hw.AudioSink = ls
			if tc.starter {
				sink = lateStarter{ls}
			}
			tap := NewTap(sink, ref, clk)
			blk := make([]int16, Rate/50) // 20 ms
			for i := range blk {
				blk[i] = 1000
			}
			if err := tap.Write(blk); err != nil {
				t.Fatal(err)
			}
			if ls.inTime != tc.starter || ls.pending == tc.starter {
				t.Fatalf("while the block played: the reference held it %v, announced it pending %v; want %v, %v", ls.inTime, ls.pending, tc.starter, !tc.starter)
			}
			got := make([]int16, 1)
			ref.Read(got, ls.start+10*time.Millisecond)
			if off := got[0] != 1000; off != !tc.starter {
				t.Fatalf("sample 10 ms into the block read %d at its true time; want found=%v", got[0], tc.starter)
			}
			if ref.behind(ref.index(ls.start+20*time.Millisecond), ls.start, 20*time.Millisecond) {
				t.Fatal("after the Write the reference still says it lacks a block")
			}
			// A quiet block (no far-end audio) is not announced.
			for i := range blk {
				blk[i] = 10
			}
			if err := tap.Write(blk); err != nil {
				t.Fatal(err)
			}
			if ls.pending {
				t.Fatal("a quiet block was announced pending")
			}
		})
	}
}

// Exact timestamps (PlayedExact) are followed at once, later (the device
// played silence nobody wrote) and earlier (a flush cut a block short),
// where Played would wait for the disagreement to persist.
func TestReferencePlayedExactFollowsAtOnce(t *testing.T) {
	for _, shift := range []time.Duration{30 * time.Millisecond, -30 * time.Millisecond} {
		r := newRefRig(t)
		blk := make([]int16, Rate*blockMS/1000)
		play := func(exact bool) {
			r.k++
			for j := range blk {
				blk[j] = int16(100 * (r.k % 300))
			}
			if exact {
				r.ref.PlayedExact(blk, r.at)
			} else {
				r.ref.Played(blk, r.at)
			}
			r.at += blockMS * time.Millisecond
			r.clk.Advance(blockMS * time.Millisecond)
		}
		for range 20 {
			play(true)
		}
		r.at += shift
		play(true)
		if !r.placed() {
			t.Errorf("shift %v: the block after the shift is not at its time", shift)
		}
		// Played, for comparison, keeps the old timeline for one block.
		r.at += shift
		play(false)
		if r.placed() {
			t.Errorf("shift %v: Played followed a one-block disagreement at once", shift)
		}
	}
}

// With the simulated speaker (it plays a block inside Write, and its echo
// reaches the mic before Write returns) the Tap records each block before
// the speaker plays it, where it plays (NextStart): a capture reading the
// echo meanwhile has the block. Recorded after Write, the reference lagged
// the echo by up to a block, and on a loaded machine by more: the first
// words of a reply passed the canceller as the user's.
func TestTapRecordsTheSimulatedSpeakersBlockBeforeItPlays(t *testing.T) {
	clk := clock.NewFake()
	clk.Advance(time.Second)
	spk, err := sim.NewSpeaker(sim.SpeakerConfig{Latency: 5 * time.Millisecond}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer spk.Close()
	ref, err := NewReference(clk, spk.Format().SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	tap := NewTap(spk, ref, clk)
	blk := make([]int16, 480) // 20 ms at 24 kHz
	for k := range 3 {
		for i := range blk {
			blk[i] = int16(1000 * (k + 1))
		}
		start := spk.NextStart()
		done := make(chan error, 1)
		go func() { done <- tap.Write(blk) }()
		// The speaker is playing the block (its Write waits on the
		// clock): the reference holds it already, 10 ms in.
		for clk.Sleepers() == 0 {
			time.Sleep(time.Millisecond)
		}
		got := make([]int16, 1)
		ref.Read(got, start+10*time.Millisecond)
		if want := int16(1000 * (k + 1)); got[0] < want-50 || got[0] > want+50 {
			t.Fatalf("block %d: while it played the reference held %d 10 ms into it, want about %d", k, got[0], want)
		}
		clk.Advance(20 * time.Millisecond)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// upSpk is a speaker that reports whether its device plays (hw/portaudio's
// Sink.Up), with a device latency.
type upSpk struct {
	latSpk
	down bool
}

func (s *upSpk) Up() bool { return !s.down }

// While the speaker reports its device gone, nothing the Tap is written
// plays, and the reference holds silence there: the canceller is not told
// the robot spoke (given the far end without its echo, the cancellers
// unlearn the room and the echo passes for the user when the device is
// back). Before and after, the blocks are recorded where they play; the
// silence is not allocated per block.
func TestTapRecordsSilenceWhileTheSpeakerIsDown(t *testing.T) {
	clk := clock.NewFake()
	clk.Advance(time.Second)
	ref, err := NewReference(clk, 24000)
	if err != nil {
		t.Fatal(err)
	}
	spk := &upSpk{}
	tap := NewTap(spk, ref, clk)
	blk := make([]int16, 480) // 20 ms at 24 kHz
	type played struct {
		at   time.Duration // DAC time of the block's first sample
		want int16
	}
	var blocks []played
	for k := range 30 {
		spk.down = k >= 10 && k < 20
		for i := range blk {
			blk[i] = int16(1000 + 100*k)
		}
		clk.Advance(20 * time.Millisecond)
		if err := tap.Write(blk); err != nil {
			t.Fatal(err)
		}
		// Write returned with the block's last sample DeviceLatency
		// (20 ms) from the DAC: its first plays now.
		want := blk[0]
		if spk.down {
			want = 0
		}
		blocks = append(blocks, played{clk.Mono(), want})
	}
	got := make([]int16, 1)
	for k, b := range blocks {
		ref.Read(got, b.at+10*time.Millisecond)
		if d := int(got[0]) - int(b.want); d < -60 || d > 60 {
			t.Errorf("block %d (device down: %v): the reference holds %d 10 ms into it, want about %d", k, k >= 10 && k < 20, got[0], b.want)
		}
	}
	if got := tap.Unplayed(); got != 200*time.Millisecond {
		t.Errorf("Unplayed %v, want the 10 blocks of 20 ms written while the device was down", got)
	}
	spk.down = true
	if n := testing.AllocsPerRun(50, func() { clk.Advance(20 * time.Millisecond); _ = tap.Write(blk) }); n != 0 {
		t.Errorf("Write while the device is down: %v allocations per block, want 0", n)
	}
}
