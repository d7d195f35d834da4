package video

import (
	"bytes"
	"context"
	"errors"
	"image"
	stdjpeg "image/jpeg"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// fakeEncoder produces tiny Annex-B access units that carry the frame
// number read from the test pattern's bar code: SPS+PPS+IDR for key
// frames (first, forced, every gop-th), one non-IDR slice otherwise.
type fakeEncoder struct {
	cfg      h264.Config
	n        int
	sinceKey int
	onEncode func(n int) // called before encoding frame number n
	buf      []byte
	closed   bool
}

func newFakeEncoder(hook func(int)) (EncoderFactory, *fakeEncoder) {
	e := &fakeEncoder{onEncode: hook}
	return func(c h264.Config) (h264.Encoder, error) {
		e.cfg = c.WithDefaults()
		if err := e.cfg.Validate(); err != nil {
			return nil, err
		}
		return e, nil
	}, e
}

// codeBytes encodes v without zero bytes (no false start codes).
func codeBytes(v uint16) []byte {
	return []byte{0x80 | byte(v>>14), 0x80 | byte(v>>7)&0x7f, 0x80 | byte(v)&0x7f}
}

func decodeCode(b []byte) int {
	return int(b[0]&0x7f)<<14 | int(b[1]&0x7f)<<7 | int(b[2]&0x7f)
}

func (e *fakeEncoder) Encode(pic *image.YCbCr, ts time.Duration, force bool) (h264.AccessUnit, error) {
	code, ok := camera.ReadBarCode(pic.Y, pic.YStride)
	if !ok {
		return h264.AccessUnit{}, errors.New("fake encoder: no bar code in picture")
	}
	if e.onEncode != nil {
		e.onEncode(int(code))
	}
	key := e.n == 0 || force || e.sinceKey+1 >= e.cfg.GOP
	e.n++
	e.buf = e.buf[:0]
	if key {
		e.sinceKey = 0
		e.buf = append(e.buf, 0, 0, 0, 1, 0x67, 0x42)
		e.buf = append(e.buf, 0, 0, 0, 1, 0x68, 0xce)
		e.buf = append(e.buf, 0, 0, 1, 0x65)
	} else {
		e.sinceKey++
		e.buf = append(e.buf, 0, 0, 1, 0x41)
	}
	e.buf = append(e.buf, codeBytes(code)...)
	return h264.AccessUnit{Data: e.buf, Key: key}, nil
}

func (e *fakeEncoder) Close() error { e.closed = true; return nil }

type sent struct {
	h       protocol.Header
	payload []byte
}

// testSink records what the lane accepted; refuse decides per call.
type testSink struct {
	mu     sync.Mutex
	calls  int
	got    []sent
	refuse func(call int, h protocol.Header) bool
}

func (s *testSink) SendVideo(h protocol.Header, p []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.refuse != nil && s.refuse(s.calls-1, h) {
		return false
	}
	s.got = append(s.got, sent{h, append([]byte(nil), p...)})
	return true
}

func (s *testSink) frames(flag protocol.Flag) []sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sent
	for _, f := range s.got {
		if f.h.Flag == flag {
			out = append(out, f)
		}
	}
	return out
}

// limitCamera ends the stream after n frames.
type limitCamera struct {
	camera.Camera
	n int
}

func (c *limitCamera) Read(f *camera.Frame) error {
	if c.n == 0 {
		return hw.ErrClosed
	}
	c.n--
	return c.Camera.Read(f)
}

func simCamera(t *testing.T, cfg camera.SimConfig, frames int) (camera.Camera, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake()
	clk.SetAutoAdvance(true)
	c, err := camera.NewSim(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	return &limitCamera{Camera: c, n: frames}, clk
}

func run(t *testing.T, cfg Config, cam camera.Camera, enc EncoderFactory, sink Sink, clk clock.Clock) (*Pipeline, *metrics.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	p, err := New(cfg, cam, enc, sink, clk, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); !errors.Is(err, hw.ErrClosed) {
		t.Fatalf("Run: %v, want the camera's end (hw.ErrClosed)", err)
	}
	return p, reg
}

// au describes an accepted H264 frame: its frame number and key flag.
type au struct {
	code int
	key  bool
}

func h264Frames(t *testing.T, s *testSink) []au {
	t.Helper()
	var out []au
	for _, f := range s.frames(protocol.FlagH264) {
		in := h264.Inspect(f.payload)
		if in.Key() != f.h.KeyFrame() {
			t.Fatalf("frame seq %d: header key mark %v, access unit key %v", f.h.Seq, f.h.KeyFrame(), in.Key())
		}
		out = append(out, au{decodeCode(f.payload[len(f.payload)-3:]), in.Key()})
	}
	return out
}

// checkGOPs fails unless every accepted non-key frame directly follows
// the frame before it: what a decoder needs to decode without errors.
func checkGOPs(t *testing.T, frames []au) {
	t.Helper()
	if len(frames) == 0 || !frames[0].key {
		t.Fatalf("stream does not start with a key frame: %v", frames)
	}
	for i := 1; i < len(frames); i++ {
		if !frames[i].key && frames[i].code != frames[i-1].code+1 {
			t.Fatalf("frame %d follows frame %d without a key frame in between: a broken GOP", frames[i].code, frames[i-1].code)
		}
	}
}

var baseConfig = Config{
	H264:  H264Config{Enabled: true, Encoder: h264.Config{BitrateKbps: 500, GOP: 10}},
	Image: ImageConfig{Interval: time.Second, Width: 160, Height: 120},
}

// TestPipelineStreams: every frame goes out in order with its capture
// time, key frames every GOP with the key mark set, one image per second
// at the configured size, sequence numbers without gaps.
func TestPipelineStreams(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 45)
	enc, fe := newFakeEncoder(nil)
	sink := &testSink{}
	p, _ := run(t, baseConfig, cam, enc, sink, clk)
	if !fe.closed {
		t.Error("encoder not closed at the end of Run")
	}
	if fe.cfg.Width != 320 || fe.cfg.Height != 240 || fe.cfg.FPS != 15 {
		t.Errorf("encoder configured %+v, want the camera's 320x240@15", fe.cfg)
	}
	frames := h264Frames(t, sink)
	if len(frames) != 45 {
		t.Fatalf("%d H264 frames sent, want 45", len(frames))
	}
	for i, f := range frames {
		if f.code != i || f.key != (i%10 == 0) {
			t.Fatalf("frame %d: %+v, want frame %d key=%v", i, f, i, i%10 == 0)
		}
	}
	var lastSeq uint32
	for i, f := range sink.got {
		if i > 0 && f.h.Seq != lastSeq+1 {
			t.Fatalf("seq %d after %d", f.h.Seq, lastSeq)
		}
		lastSeq = f.h.Seq
	}
	for i, f := range sink.frames(protocol.FlagH264) {
		want := (time.Duration(i) * time.Second / 15).Microseconds()
		if f.h.Timestamp != want || f.h.Kind != protocol.KindVideo || f.h.Stream != 0 {
			t.Fatalf("frame %d: header %+v, want video timestamp %d µs", i, f.h, want)
		}
	}
	imgs := sink.frames(protocol.FlagImage)
	if len(imgs) != 3 {
		t.Fatalf("%d images in 3 s at 1/s, want 3", len(imgs))
	}
	for i, im := range imgs {
		if want := int64(i) * 1e6; im.h.Timestamp != want {
			t.Errorf("image %d at %d µs, want %d", i, im.h.Timestamp, want)
		}
		if !im.h.KeyFrame() {
			t.Errorf("image %d: mark bit 0 (key frame) not set; every JPEG stands alone (§4.6)", i)
		}
		cfg, err := stdjpeg.DecodeConfig(bytes.NewReader(im.payload))
		if err != nil || cfg.Width != 160 || cfg.Height != 120 {
			t.Fatalf("image %d: %+v, %v; want a 160x120 JPEG", i, cfg, err)
		}
	}
	st := p.Stats()
	if st.Captured != 45 || st.Encoded != 45 || st.Sent != 45 || st.Dropped != 0 || st.KeyframesSent != 5 || st.ImagesSent != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPipelineDropsWholeGOPs: when the lane refuses frames, the pipeline
// skips to a fresh key frame; the gateway never gets a broken GOP, and
// drops are counted.
func TestPipelineDropsWholeGOPs(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 60)
	enc, _ := newFakeEncoder(nil)
	// The lane refuses call 12 and calls 30-38 (a long outage).
	sink := &testSink{refuse: func(call int, _ protocol.Header) bool {
		return call == 12 || (call >= 30 && call <= 38)
	}}
	cfg := baseConfig
	cfg.Image.Interval = 0
	p, _ := run(t, cfg, cam, enc, sink, clk)
	frames := h264Frames(t, sink)
	checkGOPs(t, frames)
	st := p.Stats()
	if st.Captured != 60 || st.Sent != int64(len(frames)) || st.Dropped != 60-st.Sent || st.LaneFull != int64(sink.calls-len(frames)) || st.LaneFull < 5 {
		t.Fatalf("stats %+v with %d frames received", st, len(frames))
	}
	// Recovery is immediate after the first refusal (the frame after a
	// refused one is forced to a key frame).
	if frames[12].code != 13 || !frames[12].key {
		t.Fatalf("after the refusal of frame 12 came %+v, want key frame 13", frames[12])
	}
	// During the long outage the pipeline backs off instead of encoding a
	// key frame for every camera frame.
	if st.Encoded > 50 {
		t.Fatalf("%d frames encoded out of 60 despite a 9-call outage: no back-off", st.Encoded)
	}
}

type depthSink struct {
	testSink
	depth int
}

func (d *depthSink) VideoQueueDepth() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.depth
}

// TestPipelineWaitsForDrainedLane: with a sink that reports its depth,
// the pipeline encodes nothing while the lane is non-empty after a drop,
// then resumes with a key frame.
func TestPipelineWaitsForDrainedLane(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 30)
	var p *Pipeline
	sink := &depthSink{}
	sink.refuse = func(call int, _ protocol.Header) bool {
		if call == 5 {
			sink.depth = 4 // full; drains when frame 20 is captured
			return true
		}
		return false
	}
	enc, _ := newFakeEncoder(func(n int) {
		if n > 5 && n < 20 {
			t.Errorf("frame %d encoded while the lane was still full", n)
		}
	})
	cam = &hookCamera{Camera: cam, before: func(n uint64) {
		if n == 20 {
			sink.mu.Lock()
			sink.depth = 0
			sink.mu.Unlock()
		}
	}}
	cfg := baseConfig
	cfg.Image.Interval = 0
	p, _ = run(t, cfg, cam, enc, sink, clk)
	frames := h264Frames(t, &sink.testSink)
	checkGOPs(t, frames)
	if frames[5].code != 20 || !frames[5].key {
		t.Fatalf("after the drop came %+v, want key frame 20", frames[5])
	}
	if st := p.Stats(); st.Encoded != 6+10 || st.Dropped != 15 {
		t.Fatalf("stats %+v", st)
	}
}

// hookCamera calls before with each frame's Seq after reading it.
type hookCamera struct {
	camera.Camera
	before func(seq uint64)
}

func (c *hookCamera) Read(f *camera.Frame) error {
	err := c.Camera.Read(f)
	if err == nil {
		c.before(f.Seq)
	}
	return err
}

// TestPipelineKeyframeRequest: after RequestKeyframe, the next frame sent
// is a key frame, including when the request arrives while a frame is
// being encoded (that frame is not sent).
func TestPipelineKeyframeRequest(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 30)
	var p *Pipeline
	enc, _ := newFakeEncoder(func(n int) {
		if n == 17 {
			p.RequestKeyframe() // arrives during the encode of frame 17
		}
	})
	cam = &hookCamera{Camera: cam, before: func(n uint64) {
		if n == 4 {
			p.RequestKeyframe() // arrives before frame 4 is encoded
		}
	}}
	sink := &testSink{}
	cfg := baseConfig
	cfg.Image.Interval = 0
	cfg.H264.Encoder.GOP = 1000
	var err error
	p, err = New(cfg, cam, enc, sink, clk, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Run(context.Background())
	frames := h264Frames(t, sink)
	checkGOPs(t, frames)
	var keys []int
	for _, f := range frames {
		if f.key {
			keys = append(keys, f.code)
		}
		if f.code == 17 {
			t.Fatal("frame 17, encoded before the request was seen, was sent after it")
		}
	}
	if len(keys) != 3 || keys[0] != 0 || keys[1] != 4 || keys[2] != 18 {
		t.Fatalf("key frames %v, want [0 4 18]", keys)
	}
	if st := p.Stats(); st.KeyRequests != 2 || st.LastKeyRequest == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPipelineResyncOnReconnect: a new gateway session starts with a key
// frame.
func TestPipelineResyncOnReconnect(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 20)
	var p *Pipeline
	cam = &hookCamera{Camera: cam, before: func(n uint64) {
		if n == 7 {
			p.LinkChanged(false, "s1")
			p.LinkChanged(true, "s2")
		}
	}}
	enc, _ := newFakeEncoder(nil)
	sink := &testSink{}
	cfg := baseConfig
	cfg.Image.Interval = 0
	cfg.H264.Encoder.GOP = 1000
	var err error
	if p, err = New(cfg, cam, enc, sink, clk, nil, nil); err != nil {
		t.Fatal(err)
	}
	p.Run(context.Background())
	frames := h264Frames(t, sink)
	if !frames[7].key || frames[6].key {
		t.Fatalf("frames around the reconnect: %+v %+v, want frame 7 to be a key frame", frames[6], frames[7])
	}
}

// TestPipelineFrameRate: a 30 fps camera streamed at 10 fps sends every
// third frame, images keep their own rate.
func TestPipelineFrameRate(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 30}, 60)
	enc, fe := newFakeEncoder(nil)
	sink := &testSink{}
	cfg := baseConfig
	cfg.H264.FPS = 10
	cfg.Image.Interval = 500 * time.Millisecond
	p, reg := run(t, cfg, cam, enc, sink, clk)
	frames := h264Frames(t, sink)
	if len(frames) != 20 {
		t.Fatalf("%d frames at 10 fps from 2 s of camera, want 20", len(frames))
	}
	for i, f := range frames {
		if f.code != 3*i {
			t.Fatalf("frame %d is camera frame %d, want %d", i, f.code, 3*i)
		}
	}
	if fe.cfg.FPS != 10 {
		t.Errorf("encoder told %v fps, want 10", fe.cfg.FPS)
	}
	if n := len(sink.frames(protocol.FlagImage)); n != 4 {
		t.Errorf("%d images in 2 s at 2/s, want 4", n)
	}
	if d := reg.Value("robot_agent_video_frames_decimated_total"); d != 40 {
		t.Errorf("decimated %d, want 40", d)
	}
	if p.Stats().Dropped != 0 {
		t.Errorf("decimation counted as drops: %+v", p.Stats())
	}
}

// TestPipelineMJPEGCamera: MJPEG frames without Huffman tables (as UVC
// cameras send them) are passed through as images (tables added) and
// decoded for the H264 encoder.
func TestPipelineMJPEGCamera(t *testing.T) {
	cam, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15, Format: camera.FormatMJPEG, StripDHT: true}, 20)
	enc, fe := newFakeEncoder(nil)
	sink := &testSink{}
	cfg := baseConfig
	cfg.Image = ImageConfig{Interval: 500 * time.Millisecond} // camera size: passthrough
	p, _ := run(t, cfg, cam, enc, sink, clk)
	frames := h264Frames(t, sink)
	if len(frames) != 20 || fe.n != 20 {
		t.Fatalf("%d frames sent, %d encoded, want 20 (bar codes read from decoded MJPEG)", len(frames), fe.n)
	}
	for i, f := range frames {
		if f.code != i {
			t.Fatalf("frame %d shows code %d after MJPEG decode", i, f.code)
		}
	}
	imgs := sink.frames(protocol.FlagImage)
	if len(imgs) != 3 { // frames span 0..1.27 s: images at 0, 0.5 and 1 s
		t.Fatalf("%d images, want 3", len(imgs))
	}
	for _, im := range imgs {
		img, err := stdjpeg.Decode(bytes.NewReader(im.payload))
		if err != nil || img.Bounds().Dx() != 320 {
			t.Fatalf("passed-through image: %v, %v", img.Bounds(), err)
		}
	}
	if p.Stats().ImagesSent != 3 {
		t.Fatalf("stats %+v", p.Stats())
	}
}

// h264Camera delivers camera-native H264 from a fake on-board encoder.
type h264Camera struct {
	camera.Camera
	enc      *fakeEncoder
	force    bool
	requests int
	canForce bool
}

func (c *h264Camera) Mode() camera.Mode {
	m := c.Camera.Mode()
	m.Format = camera.FormatH264
	return m
}

func (c *h264Camera) Read(f *camera.Frame) error {
	if err := c.Camera.Read(f); err != nil {
		return err
	}
	a, err := c.enc.Encode(f.Image, f.TS, c.force)
	c.force = false
	f.Format, f.Data = camera.FormatH264, append(f.Data[:0], a.Data...)
	return err
}

func (c *h264Camera) RequestKeyframe() error {
	c.requests++
	if !c.canForce {
		return errors.New("no")
	}
	c.force = true
	return nil
}

// TestPipelinePassthrough: camera-native H264 goes out untouched; after a
// drop the pipeline asks the camera for a key frame and skips to it.
func TestPipelinePassthrough(t *testing.T) {
	for _, canForce := range []bool{true, false} {
		t.Run(map[bool]string{true: "camera can force", false: "camera cannot force"}[canForce], func(t *testing.T) {
			sim, clk := simCamera(t, camera.SimConfig{Width: 320, Height: 240, FPS: 15}, 40)
			fe := &fakeEncoder{cfg: h264.Config{GOP: 12}}
			cam := &h264Camera{Camera: sim, enc: fe, canForce: canForce}
			sink := &testSink{refuse: func(call int, _ protocol.Header) bool { return call == 5 }}
			cfg := Config{H264: H264Config{Enabled: true, Passthrough: true}}
			p, _ := run(t, cfg, cam, nil, sink, clk)
			frames := h264Frames(t, sink)
			checkGOPs(t, frames)
			want := 12 // the camera's own next key frame
			if canForce {
				want = 6
			}
			if frames[5].code != want || !frames[5].key {
				t.Fatalf("after the drop came %+v, want key frame %d", frames[5], want)
			}
			if cam.requests == 0 {
				t.Fatal("pipeline never asked the camera for a key frame")
			}
			if st := p.Stats(); st.Encoded != 0 || st.Sent != int64(len(frames)) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestPipelineConfigErrors(t *testing.T) {
	mk := func(f camera.PixelFormat) camera.Camera {
		c, _ := camera.NewSim(camera.SimConfig{Width: 320, Height: 240}, clock.NewFake())
		if f == camera.FormatH264 {
			return &h264Camera{Camera: c}
		}
		return c
	}
	enc, _ := newFakeEncoder(nil)
	tests := []struct {
		name string
		cfg  Config
		f    camera.PixelFormat
	}{
		{"nothing enabled", Config{}, camera.FormatI420},
		{"odd image size", Config{Image: ImageConfig{Interval: time.Second, Width: 161, Height: 120}}, camera.FormatI420},
		{"half image size", Config{Image: ImageConfig{Interval: time.Second, Width: 160}}, camera.FormatI420},
		{"bad quality", Config{Image: ImageConfig{Interval: time.Second, Quality: 101}}, camera.FormatI420},
		{"images from H264", Config{H264: H264Config{Enabled: true, Passthrough: true}, Image: ImageConfig{Interval: time.Second}}, camera.FormatH264},
		{"re-encode H264", Config{H264: H264Config{Enabled: true}}, camera.FormatH264},
		{"bad encoder config", Config{H264: H264Config{Enabled: true, Encoder: h264.Config{BitrateKbps: 1}}}, camera.FormatI420},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg, mk(tt.f), enc, &testSink{}, clock.NewFake(), nil, nil); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// TestPipelineStopsOnCancel: cancelling the context closes the camera and
// Run returns nil.
func TestPipelineStopsOnCancel(t *testing.T) {
	c, err := camera.NewSim(camera.SimConfig{Width: 320, Height: 240, FPS: 30}, clock.NewReal())
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := newFakeEncoder(nil)
	sink := &testSink{}
	p, err := New(baseConfig, c, enc, sink, clock.NewReal(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for p.Stats().Sent < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("second Run accepted")
	}
}
