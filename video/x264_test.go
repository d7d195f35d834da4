//go:build x264 && cgo

package video

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/video/videotest"
)

// TestPipelineX264DropsDecodeCleanly: real x264 output with lane refusals
// in the middle of GOPs decodes without a single error, and the decoded
// pictures are exactly the frames accepted, in order.
func TestPipelineX264DropsDecodeCleanly(t *testing.T) {
	const w, h, n = 320, 240, 90
	cam, clk := simCamera(t, camera.SimConfig{Width: w, Height: h, FPS: 15}, n)
	sink := &testSink{refuse: func(call int, _ protocol.Header) bool {
		return call == 7 || call == 23 || (call >= 40 && call < 46)
	}}
	cfg := Config{H264: H264Config{Enabled: true, Encoder: h264.Config{BitrateKbps: 300, GOP: 15}}}
	p, _ := run(t, cfg, cam, nil, sink, clk)
	var file []byte
	for _, f := range sink.frames(protocol.FlagH264) {
		file = append(file, f.payload...)
	}
	st := p.Stats()
	if st.LaneFull == 0 || st.Dropped == 0 || st.Sent+st.Dropped != n {
		t.Fatalf("stats %+v", st)
	}
	videotest.RequireFFmpeg(t)
	path := filepath.Join(t.TempDir(), "drops.h264")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if e := videotest.DecodeErrors(t, path); e != "" {
		t.Fatalf("decoder errors after drops: %s", e)
	}
	frames := videotest.ProbeH264(t, path)
	sentFrames := sink.frames(protocol.FlagH264)
	if len(frames) != len(sentFrames) {
		t.Fatalf("decoded %d frames, sent %d", len(frames), len(sentFrames))
	}
	codes := videotest.DecodeBarCodes(t, path, w, h)
	prev := -1
	for i, c := range codes {
		if frames[i].Key != sentFrames[i].h.KeyFrame() {
			t.Fatalf("frame %d: decoder key=%v, header mark=%v", i, frames[i].Key, sentFrames[i].h.KeyFrame())
		}
		if c <= prev {
			t.Fatalf("decoded frame %d shows %d after %d", i, c, prev)
		}
		if c != prev+1 && !frames[i].Key {
			t.Fatalf("decoded frame %d (camera frame %d) follows camera frame %d without a key frame", i, c, prev)
		}
		prev = c
	}
}

// BenchmarkPipeline640x480 measures the whole pipeline per camera frame:
// synthetic capture (drawing the test pattern, as a camera's copy and
// conversion would cost), x264 encoding, handing to the lane, plus one
// JPEG image per second. cpu-ms/frame counts every thread (x264 slices);
// %cpu@15fps is that cost at 15 frames per second. "capture-only" is the
// baseline without encoding.
func BenchmarkPipeline640x480(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"capture-only", Config{Image: ImageConfig{Interval: time.Hour}}},
		{"h264", Config{H264: H264Config{Enabled: true, Encoder: h264.Config{BitrateKbps: 800}}}},
		{"h264+image1s", Config{H264: H264Config{Enabled: true, Encoder: h264.Config{BitrateKbps: 800}}, Image: ImageConfig{Interval: time.Second}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			clk := clock.NewFake()
			clk.SetAutoAdvance(true)
			sim, err := camera.NewSim(camera.SimConfig{Width: 640, Height: 480, FPS: 15}, clk)
			if err != nil {
				b.Fatal(err)
			}
			cam := &limitCamera{Camera: sim, n: b.N}
			var bytes int64
			sink := sinkFunc(func(h protocol.Header, p []byte) bool { bytes += int64(len(p)); return true })
			p, err := New(bc.cfg, cam, nil, sink, clk, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			p.Run(context.Background())
			b.StopTimer()
			cpu := cpuTime() - cpu0
			perFrame := float64(cpu) / float64(b.N)
			b.ReportMetric(perFrame/1e6, "cpu-ms/frame")
			b.ReportMetric(perFrame*15/1e9*100, "%cpu@15fps")
			b.ReportMetric(float64(bytes)/float64(b.N)*15, "B/s@15fps")
		})
	}
}

type sinkFunc func(protocol.Header, []byte) bool

func (f sinkFunc) SendVideo(h protocol.Header, p []byte) bool { return f(h, p) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
