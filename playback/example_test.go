package playback_test

import (
	"encoding/binary"
	"fmt"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
)

func Example() {
	reg := metrics.NewRegistry()
	p, err := playback.New(playback.Config{}, clock.NewReal(), reg, nil)
	if err != nil {
		panic(err)
	}

	// Read pump: 30 ms of TTS for response 1 (PCM16LE), then its end.
	pcm := make([]byte, 2*720)
	for i := 0; i < 720; i++ {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(1000))
	}
	_ = p.PushPCM(1, pcm)
	p.EndResponse(1)

	// Device callback: 10 ms periods. The response has ended, so it plays
	// without waiting for the 60 ms prebuffer; after it the output fades
	// to silence over 4 ms (96 samples) instead of stepping.
	period := make([]int16, 240)
	for i := 0; i < 4; i++ {
		p.Fill(period)
		fmt.Println("period", i, "samples", period[0], "...", period[239], "progress", p.Progress())
	}

	// Control lane: turn completion events into playback_progress messages.
	p.DrainEvents(func(e playback.Event) {
		fmt.Printf("response %d %s after %d samples\n", e.ResponseID, e.Kind, e.SamplesPlayed)
	})

	// Barge-in on a response that is still streaming: O(1), any goroutine.
	_ = p.PushPCM(2, pcm)
	fmt.Println("interrupted up to", p.Interrupt(0))
	fmt.Println("late chunk:", p.PushPCM(2, pcm))
	fmt.Println("stale chunks:", reg.Value("robot_agent_playback_stale_frames_dropped_total"))
	// Output:
	// period 0 samples 1000 ... 1000 progress {1 240}
	// period 1 samples 1000 ... 1000 progress {1 480}
	// period 2 samples 1000 ... 1000 progress {1 720}
	// period 3 samples 989 ... 0 progress {0 0}
	// response 1 done after 720 samples
	// interrupted up to 2
	// late chunk: playback: chunk of an interrupted or superseded response dropped
	// stale chunks: 1
}
