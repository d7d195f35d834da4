package resample_test

import (
	"fmt"

	"github.com/robot-agent/robot-agent/codec/resample"
)

// Convert 10 ms chunks of 24 kHz TTS audio for a 48 kHz stereo speaker.
func Example() {
	r, err := resample.New(24000, 48000, resample.QualityDefault)
	if err != nil {
		panic(err)
	}
	chunk := make([]int16, 240)          // 10 ms at 24 kHz, from the jitter buffer
	mono := make([]int16, r.OutLen(240)) // allocated once
	stereo := make([]int16, 2*len(mono)) // allocated once
	for range 3 {
		n := r.Process(mono, chunk)
		m := resample.Upmix(stereo, mono[:n], 2)
		fmt.Println(n, "mono samples,", m, "interleaved")
	}
	fmt.Printf("delay %.1f output samples\n", r.Delay())
	// Output:
	// 480 mono samples, 960 interleaved
	// 480 mono samples, 960 interleaved
	// 480 mono samples, 960 interleaved
	// delay 45.5 output samples
}
