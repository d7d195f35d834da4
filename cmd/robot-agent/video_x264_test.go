//go:build x264 && cgo

package main

import (
	"bytes"
	"image/jpeg"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"

	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/video/videotest"
)

// TestVideoEndToEnd: frames from mediadevices' synthetic video driver go
// through the agent (x264) to the embedded gateway over the real
// WebSocket. The H264 the gateway received decodes without errors at the
// configured size, with about the expected number of frames, key frames
// exactly where the protocol marked them, and capture timestamps strictly
// increasing; images decode as JPEG of the configured size. Midway the
// gateway asks for a key frame: the first frame captured after the robot
// handled the request is a key frame, and no non-key frame captured after
// it arrives before that key frame.
func TestVideoEndToEnd(t *testing.T) {
	videotest.RequireFFmpeg(t)
	const w, h, fps = 320, 240, 15
	cc := defaultCameraConfig()
	cc.Enabled, cc.Device, cc.Width, cc.Height, cc.FPS = true, camera.VideoTestDevice, w, h, fps
	cc.H264.BitrateKbps, cc.H264.GOP = 300, 1000 // no periodic key frame during the test
	cc.Image = cameraImageConfig{IntervalMS: 500, Width: 160, Height: 120, Quality: 75}
	e := startVideoE2E(t, cc, nil, nil)
	e.v.start(e.a)
	waitUntil(t, 10*time.Second, "session", func() bool { return e.a.client.Up() })
	start := time.Now()
	waitUntil(t, 10*time.Second, "1.5 s of video", func() bool { return len(videoEvents(e.a.gw, protocol.FlagH264)) >= 22 })
	sess := e.a.gw.Sessions()[0]
	if err := sess.Send(&protocol.KeyframeRequest{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the robot to handle the key frame request", func() bool { return e.v.p.Stats().KeyRequests == 1 })
	reqAt := e.v.p.Stats().LastKeyRequest
	time.Sleep(1500 * time.Millisecond)
	e.stop(t)
	elapsed := time.Since(start)

	frames := videoEvents(e.a.gw, protocol.FlagH264)
	var stream []byte
	last := int64(-1)
	var keys []int
	for i, ev := range frames {
		stream = append(stream, ev.Payload...)
		if ev.Header.Timestamp <= last {
			t.Fatalf("frame %d captured at %d µs, not after %d µs", i, ev.Header.Timestamp, last)
		}
		last = ev.Header.Timestamp
		if ev.Header.KeyFrame() {
			keys = append(keys, i)
		}
	}
	// Key frame request: frame 0 and one requested key frame, the first
	// frame captured after the request.
	if len(keys) != 2 || keys[0] != 0 {
		t.Fatalf("key frames at %v, want frame 0 and one requested", keys)
	}
	for i, ev := range frames {
		if time.Duration(ev.Header.Timestamp)*time.Microsecond >= reqAt {
			if i != keys[1] {
				t.Fatalf("first frame captured after the request (%d at %d µs, request at %v) is not the key frame (%d)", i, ev.Header.Timestamp, reqAt, keys[1])
			}
			break
		}
	}

	path := filepath.Join(t.TempDir(), "e2e.h264")
	if err := os.WriteFile(path, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := videotest.DecodeErrors(t, path); errs != "" {
		t.Fatalf("ffmpeg: %s", errs)
	}
	probed := videotest.ProbeH264(t, path)
	if len(probed) != len(frames) {
		t.Fatalf("ffprobe decoded %d frames of the %d received", len(probed), len(frames))
	}
	for i, f := range probed {
		if f.Width != w || f.Height != h {
			t.Fatalf("frame %d is %dx%d, want %dx%d", i, f.Width, f.Height, w, h)
		}
		if f.Key != frames[i].Header.KeyFrame() {
			t.Fatalf("frame %d: decoder says key=%v, protocol mark says %v", i, f.Key, frames[i].Header.KeyFrame())
		}
	}
	// Frame count: the stream ran for about elapsed at 15 fps; allow for
	// start-up and a loaded machine, but a stalled pipeline fails.
	want := elapsed.Seconds() * fps
	if n := float64(len(frames)); n < want*0.6 || n > want*1.1 {
		t.Fatalf("%d frames in %v, want about %.0f", len(frames), elapsed.Round(time.Millisecond), want)
	}
	st := e.v.p.Stats()
	// Dropped: at most the one frame encoded while the request arrived.
	if st.Sent != int64(len(frames)) || st.Dropped > 1 {
		t.Fatalf("stats %+v, gateway got %d frames", st, len(frames))
	}
	imgs := videoEvents(e.a.gw, protocol.FlagImage)
	if len(imgs) < 4 {
		t.Fatalf("%d images in %v at 2/s", len(imgs), elapsed)
	}
	for i, ev := range imgs {
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(ev.Payload))
		if err != nil || cfg.Width != 160 || cfg.Height != 120 {
			t.Fatalf("image %d: %+v, %v", i, cfg, err)
		}
	}
}

// TestVideoBackPressure: with the uplink throttled below the video
// bitrate (a rate-limited TCP proxy between robot and gateway), mic audio
// keeps flowing with no more added delay than the bound below, video drops
// are counted, and the H264 the gateway got decodes without a single
// error: drops fall between GOPs.
//
// The bound: the write pump puts at most one video frame between two
// looks at the mic lane, so a mic frame waits at most for the video frame
// being written plus what the transport already holds ahead of it,
// drained at the link rate: (largest video frame + transport buffer) /
// rate. The transport buffer is what the uplink lets the kernel hold
// unsent (TCP_NOTSENT_LOWAT 16 KiB plus one 16 KiB write) plus what is in
// flight (here the proxy's 4 KiB window and 4 KiB read): 40 KiB. 150 ms
// are added for scheduling on a loaded 2-core machine. Without a limit on
// unsent bytes the kernel's socket buffer (autotuned up to 4 MiB) swallows
// the video, nothing is ever dropped and the mic audio queues behind it
// for seconds.
func TestVideoBackPressure(t *testing.T) {
	videotest.RequireFFmpeg(t)
	const (
		w, h, fps = 320, 240, 15
		rate      = 80e3 // bytes/s robot → gateway; mic audio alone needs ~34 kB/s
		kbps      = 1000 // video wants 125 kB/s
		vbvMS     = 200  // largest frame ~25 kB
	)
	clk := clock.NewReal()
	rec, err := gateway.NewVideoRecorder("", clk)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{NoEcho: true}, clk, metrics.NewRegistry(), quietLog(), gateway.Hooks{OnVideo: rec.OnVideo})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	proxy := startThrottleProxy(t, srv.Listener.Addr().String(), rate)

	cc := defaultCameraConfig()
	cc.Enabled, cc.Device, cc.Width, cc.Height, cc.FPS = true, "sim", w, h, fps
	cc.H264.BitrateKbps, cc.H264.GOP, cc.H264.VBVMS = kbps, 15, vbvMS
	cc.Image.IntervalMS = 0
	e := startVideoE2E(t, cc, clk, func(c *config.Config) {
		c.Gateway.URL = "ws://" + proxy.addr() + gateway.Path
		c.Gateway.Token = "throttle-test"
	})
	waitUntil(t, 10*time.Second, "session", func() bool { return e.a.client.Up() })
	time.Sleep(2 * time.Second)
	base := gw.MicLatencies()
	e.v.start(e.a)
	time.Sleep(5 * time.Second)
	e.stop(t)
	withVideo := gw.MicLatencies()[len(base):]

	sessions := rec.Sessions()
	if len(sessions) != 1 {
		t.Fatalf("recorded sessions %v", sessions)
	}
	frames := rec.Frames(sessions[0])
	maxFrame := 0
	for _, f := range frames {
		maxFrame = max(maxFrame, f.Size)
	}
	st := e.v.p.Stats()
	b50, b99, bn := percentiles(base)
	v50, v99, vn := percentiles(withVideo)
	vmax := slices.Max(withVideo)
	t.Logf("mic latency without video p50 %v p99 %v (%d frames); with video p50 %v p99 %v max %v (%d frames)", b50, b99, bn, v50, v99, vmax, vn)
	t.Logf("video: %+v; %d frames at the gateway, largest %d bytes", st, len(frames), maxFrame)

	if n := e.reg.Value("robot_agent_uplink_mic_frames_dropped_total"); n != 0 {
		t.Fatalf("%d mic frames dropped", n)
	}
	if vn < 200 {
		t.Fatalf("only %d mic frames reached the gateway in 5 s with video", vn)
	}
	bound := time.Duration(float64(maxFrame+40<<10)/rate*float64(time.Second)) + 150*time.Millisecond
	if vmax > b99+bound {
		t.Fatalf("mic frames delayed up to %v with video (p99 %v without); bound %v. Does the uplink limit the bytes the kernel holds unsent (TCP_NOTSENT_LOWAT, docs/video.md)?", vmax, b99, bound)
	}
	if st.LaneFull == 0 || st.Dropped == 0 {
		t.Fatalf("no video drops counted with the link below the video bitrate: %+v (the socket buffer swallowed the video?)", st)
	}
	if st.Sent < 15 {
		t.Fatalf("only %d video frames sent in 5 s", st.Sent)
	}

	path := filepath.Join(t.TempDir(), "throttled.h264")
	if err := os.WriteFile(path, rec.H264(sessions[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := videotest.DecodeErrors(t, path); errs != "" {
		t.Fatalf("the throttled stream has decode errors: %s", errs)
	}
	codes := videotest.DecodeBarCodes(t, path, w, h)
	if len(codes) != len(frames) {
		t.Fatalf("decoded %d pictures from %d frames", len(codes), len(frames))
	}
	// A gap in the sequence numbers is a frame the lane refused: the
	// stream must resume at a key frame. A gap in the camera's frame
	// numbers alone is a picture the pipeline never encoded (the camera
	// hands over its newest picture; a reader late under load skips some),
	// which leaves the stream intact.
	gaps := 0
	for i := 1; i < len(codes); i++ {
		if codes[i] < 0 || codes[i] <= codes[i-1] {
			t.Fatalf("picture %d shows frame %d after %d: corrupted or out of order", i, codes[i], codes[i-1])
		}
		if prev, cur := frames[i-1].Header.Seq, frames[i].Header.Seq; cur != prev+1 {
			gaps++
			if !frames[i].Header.KeyFrame() {
				t.Fatalf("sequence numbers %d..%d refused by the lane before picture %d (camera frame %d), which is not a key frame", prev+1, cur-1, i, codes[i])
			}
		}
	}
	if gaps == 0 {
		t.Fatal("no gap in the sequence numbers despite lane drops")
	}
}
