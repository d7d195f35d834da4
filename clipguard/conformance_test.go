package clipguard

import (
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/hw/sim"
)

// The Sink keeps the hw.AudioSink contract of the device below (pacing,
// Close unblocking Write, errors after Close), unity or lowered.
func TestSinkConformance(t *testing.T) {
	for _, lowered := range []bool{false, true} {
		clk := clock.NewFake()
		clk.SetAutoAdvance(true)
		hwtest.TestAudioSink(t, func() hw.AudioSink {
			spk, err := sim.NewSpeaker(sim.SpeakerConfig{}, clk)
			if err != nil {
				t.Fatal(err)
			}
			c := &clips{}
			g, err := New(spk, c, Config{}, clk, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if lowered {
				c.n.Add(3)
				g.Write(make([]int16, 240)) // steps down: Write goes through the gain
				if g.BackoffDB() != DefaultStepDB {
					t.Fatalf("not lowered: %v dB", g.BackoffDB())
				}
			}
			return g
		}, clk)
	}
}
