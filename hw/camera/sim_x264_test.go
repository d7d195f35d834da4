//go:build x264 && cgo

package camera

import (
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
)

// TestSimH264: the simulated camera with an on-board encoder streams
// Annex-B access units, key frames every GOP and on request.
func TestSimH264(t *testing.T) {
	testCamera(t, func(t *testing.T) Camera {
		c, err := NewSim(SimConfig{Width: 320, Height: 240, FPS: 30, Format: FormatH264}, clock.NewReal())
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
	clk := clock.NewFake()
	clk.SetAutoAdvance(true)
	c, err := NewSim(SimConfig{Width: 320, Height: 240, FPS: 15, Format: FormatH264, H264: h264.Config{GOP: 10}}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var f Frame
	for i := 0; i < 25; i++ {
		if i == 13 {
			if err := c.RequestKeyframe(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Read(&f); err != nil {
			t.Fatal(err)
		}
		want := i == 0 || i == 10 || i == 13 || i == 23
		if got := h264.Inspect(f.Data).Key(); got != want {
			t.Fatalf("frame %d: key %v, want %v", i, got, want)
		}
	}
	i420, _ := NewSim(SimConfig{}, clk)
	if err := i420.RequestKeyframe(); err == nil {
		t.Fatal("an I420 camera accepted a key frame request")
	}
}
