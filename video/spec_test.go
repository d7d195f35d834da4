package video

import (
	"testing"

	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestSpec_4_6_VideoHeaders: video frames carry stream id 0; the key frame
// mark is set on exactly the H264 access units that are IDRs with SPS and
// PPS in-band, and on every JPEG image.
func TestSpec_4_6_VideoHeaders(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 30)
	enc, _ := newFakeEncoder(nil)
	sink := &testSink{}
	run(t, baseConfig, cam, enc, sink, clk)
	keys, images := 0, 0
	for _, f := range sink.got {
		if f.h.Kind != protocol.KindVideo || f.h.Stream != 0 {
			t.Fatalf("video header %+v: want kind 2, stream 0", f.h)
		}
		switch f.h.Flag {
		case protocol.FlagH264:
			in := h264.Inspect(f.payload)
			if f.h.KeyFrame() != (in.IDR && in.SPS && in.PPS) {
				t.Fatalf("seq %d: key mark %v for an access unit %+v", f.h.Seq, f.h.KeyFrame(), in)
			}
			if f.h.KeyFrame() {
				keys++
			}
		case protocol.FlagImage:
			images++
			if !f.h.KeyFrame() {
				t.Fatalf("image seq %d without mark bit 0", f.h.Seq)
			}
		}
	}
	if keys == 0 || images == 0 {
		t.Fatalf("%d key frames, %d images: nothing checked", keys, images)
	}
}
