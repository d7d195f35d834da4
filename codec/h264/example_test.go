package h264_test

import (
	"fmt"

	"github.com/robot-agent/robot-agent/codec/h264"
)

// Inspecting an access unit: SPS, PPS and an IDR slice make a key frame a
// decoder can start at.
func ExampleInspect() {
	au := []byte{
		0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x16, // SPS (truncated)
		0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80, // PPS
		0, 0, 1, 0x65, 0x88, 0x84, // IDR slice
	}
	for nal := range h264.NALUnits(au) {
		fmt.Print(h264.NALType(nal), " ")
	}
	fmt.Println(h264.Inspect(au).Key())
	// Output: 7 8 5 true
}
