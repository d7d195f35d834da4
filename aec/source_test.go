package aec

import (
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

type fakeMic struct{ clk *clock.Fake }

func (m fakeMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m fakeMic) Close() error           { return nil }
func (m fakeMic) Read(dst []int16) (int, error) {
	m.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	for i := range dst {
		dst[i] = int16(i * 7)
	}
	return len(dst), nil
}

type nullSpk struct{}

func (nullSpk) Format() hw.AudioFormat { return hw.TTSFormat }
func (nullSpk) Write([]int16) error    { return nil }
func (nullSpk) Close() error           { return nil }

// The fast lane: the speaker tap and the cancelling source allocate nothing
// per frame, with every canceller this build has.
func TestTapAndSourceDoNotAllocate(t *testing.T) {
	for _, k := range Available() {
		clk := clock.NewFake()
		ref, err := NewReference(clk, 24000)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{Kind: k})
		if err != nil {
			t.Fatal(err)
		}
		tap := NewTap(nullSpk{}, ref, clk)
		src := NewSource(fakeMic{clk}, ref, c, clk, SourceConfig{})
		blk, frame := make([]int16, 480), make([]int16, 320)
		for i := range blk {
			blk[i] = int16(i * 13)
		}
		step := func() {
			tap.Write(blk)
			src.Read(frame)
		}
		for range 200 { // past the delay estimator's first updates
			step()
		}
		if a := testing.AllocsPerRun(300, step); a != 0 {
			t.Errorf("%s: %v allocs per 20 ms frame", k, a)
		}
		c.Close()
	}
}

// The far end comes back at the time it was played, and a pause in the
// speaker's writes reads as silence.
func TestReferenceAlignsOnPlayTime(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, Rate)
	blk := make([]int16, 160)
	for i := range blk {
		blk[i] = 1000
	}
	ref.Played(blk, time.Second) // index 0 = 1 s
	clk.Advance(10 * time.Millisecond)
	ref.Played(blk, time.Second+10*time.Millisecond) // contiguous
	clk.Advance(190 * time.Millisecond)
	ref.Played(blk, time.Second+200*time.Millisecond) // after a pause in the writes
	got := make([]int16, 160)
	for _, tc := range []struct {
		at   time.Duration
		want int16
	}{
		{time.Second, 1000}, {time.Second + 10*time.Millisecond, 1000}, {time.Second + 100*time.Millisecond, 0},
		{time.Second + 200*time.Millisecond, 1000}, {time.Second + 300*time.Millisecond, 0}, {500 * time.Millisecond, 0},
	} {
		ref.Read(got, tc.at)
		// Away from the resampler's edges the level is the block's.
		if v := got[80]; (tc.want == 0) != (v == 0) || tc.want != 0 && (v < 900 || v > 1100) {
			t.Errorf("at %v: sample %d, want about %d", tc.at, v, tc.want)
		}
	}
}
