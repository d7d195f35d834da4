package capture_test

import (
	"context"
	"fmt"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw/sim"
)

// printer prints frames and stops the pump after a few.
type printer struct {
	n    int
	stop context.CancelFunc
}

func (p *printer) SendMic(f *capture.Frame) bool {
	fmt.Printf("utterance %d seq %d flag %d ts %v samples %d\n", f.Utterance, f.Seq, f.Flag, f.TS, len(f.Samples))
	if p.n++; p.n == 3 {
		p.stop()
	}
	return true
}

func Example() {
	clk := clock.NewFake()
	clk.SetAutoAdvance(true) // simulated time runs as fast as the CPU
	mic, _ := sim.NewMic(sim.MicConfig{Script: &sim.SpeechScript{
		Utterances: []sim.Utterance{{Speech: time.Second}},
	}}, clk)
	defer mic.Close()

	ctx, cancel := context.WithCancel(context.Background())
	pump, err := capture.NewPump(capture.Config{Mode: capture.ModeContinuous}, mic, &printer{stop: cancel}, clk, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pump.Run(ctx))
	// Output:
	// utterance 1 seq 0 flag 0 ts 0s samples 320
	// utterance 1 seq 1 flag 1 ts 20ms samples 320
	// utterance 1 seq 2 flag 1 ts 40ms samples 320
	// utterance 1 seq 3 flag 2 ts 60ms samples 0
	// context canceled
}
