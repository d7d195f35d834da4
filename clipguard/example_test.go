package clipguard_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clipguard"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

type speaker struct{}

func (speaker) Format() hw.AudioFormat { return hw.TTSFormat }
func (speaker) Write([]int16) error    { return nil }
func (speaker) Close() error           { return nil }

// micClips stands for aec.Source: the mic frames its echo clipped.
type micClips struct{ atomic.Int64 }

func (m *micClips) EchoClips() int64 { return m.Load() }

// The robot speaks; its echo clips the mic three times within a second:
// its voice goes 3 dB down at the next Write.
func Example() {
	clk := clock.NewFake()
	mic := &micClips{}
	g, err := clipguard.New(speaker{}, mic, clipguard.Config{}, clk, nil, nil)
	if err != nil {
		panic(err)
	}
	period := make([]int16, 240) // 10 ms at 24 kHz
	for i := range period {
		period[i] = 20000
	}
	for i := range 100 {
		if i%30 == 0 {
			mic.Add(1) // the capture side counted a clipped echo frame
		}
		g.Write(period)
		clk.Advance(10 * time.Millisecond)
	}
	fmt.Printf("lowered by %.0f dB\n", g.BackoffDB())
	// Output: lowered by 3 dB
}
