package duplex

import (
	"testing"

	"github.com/robot-agent/robot-agent/warmup"
)

// A broadband start-up sound ends with a reverberant tail at the level of
// a loud word: in a quiet reverberant room the chain, which has learnt
// nothing of the room yet, takes the tail for a user unless the mic is
// held while the sound plays and after it (Scenario.Prelude's gate, as the
// agent holds it). The ungated run must show the problem, else the scene
// proves nothing.
func TestStartupSoundTailStartsNoUtterance(t *testing.T) {
	if raceEnabled {
		t.Skip("4 scenes of 11 s: minutes under -race; make test runs this test in its pass without")
	}
	s := quietDefaultRoom(t, 1)
	s.Room.RT60, s.Room.DRRDB = 0.8, -1
	s.Prelude = warmup.Noise(warmup.DefaultDuration, FarRate, warmup.DefaultDBFS, 1)
	ungated := 0
	for _, seed := range []uint64{17, 18} {
		s.Room.Seed, s.Seed = seed, seed
		for _, open := range []bool{true, false} {
			s.preludeUngated = open
			r, err := Run(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d, mic held %v: %d false barge-ins before the reply (%d in all)", seed, !open, r.FalseBeforeReplies, r.FalseBargeIns)
			if open {
				ungated += r.FalseBeforeReplies
			} else if r.FalseBeforeReplies != 0 {
				t.Errorf("seed %d: %d false barge-ins before the reply with the mic held during the start-up sound, want 0", seed, r.FalseBeforeReplies)
			}
		}
	}
	if ungated == 0 {
		t.Error("no false barge-in without the gate either: the scene does not show what the gate prevents")
	}
}

// The canceller learns the room from the start-up sound: in the first two
// replies after start, a user 10 dB under the robot's echo in pink noise is
// heard within 300 ms more often with the sound than without it.
func TestStartupSoundTeachesTheCancellerTheRoom(t *testing.T) {
	if raceEnabled {
		t.Skip("12 scenes: minutes under -race; make test runs this test in its pass without")
	}
	s := quietDefaultRoom(t, 2)
	_, s.Near = speech(t)
	s.BargeIn, s.SERDB, s.SNRDB, s.NoiseKind = true, -10, 10, "pink"
	var with, without, false2 int
	for seed := uint64(1); seed <= 6; seed++ {
		s.Room.Seed, s.Seed = seed, seed
		for _, pre := range []bool{false, true} {
			s.Prelude = nil
			if pre {
				s.Prelude = warmup.Noise(warmup.DefaultDuration, FarRate, warmup.DefaultDBFS, 1)
			}
			r, err := Run(s)
			if err != nil {
				t.Fatal(err)
			}
			if pre {
				with += r.BargeInsIn300ms
				false2 += r.FalseBargeIns
			} else {
				without += r.BargeInsIn300ms
			}
		}
	}
	t.Logf("first 2 replies of 6 starts: %d barge-ins within 300 ms with the start-up sound, %d without; %d false with it", with, without, false2)
	if with < without+2 || false2 != 0 {
		t.Errorf("with the start-up sound %d barge-ins within 300 ms (%d false), without %d: want at least 2 more and none false", with, false2, without)
	}
}
