// Package video is the agent's video pipeline: camera → H264 encoder (or
// the camera's own H264) → the uplink's lossy video lane, plus a still
// image stream (JPEG) at its own rate from the same frames.
//
// # Lossy, key-frame-aware policy
//
// The uplink's video lane refuses a frame when it is full (the link is
// slower than the video). A refused H264 frame breaks its GOP: every later
// frame up to the next key frame refers to it and would decode as
// garbage. So after any refusal the pipeline stops encoding, waits until
// the lane has drained (when the sink reports its depth; otherwise with an
// exponential back-off of 1, 2, 4... frames up to one second), then
// encodes the newest frame as an IDR and resumes from there: the gateway
// only ever receives whole GOPs, missing frames fall between them, and the
// newest picture wins over old ones. With camera-native H264 the pipeline
// cannot force an IDR (unless the camera implements
// camera.KeyframeRequester); it skips frames until the camera's next key
// frame.
//
// A keyframe_request from the gateway (RequestKeyframe) makes the next
// encoded frame an IDR; a frame encoded before the request arrived but
// not yet sent is dropped rather than sent after it, so the first frame
// handed to the lane after RequestKeyframe returns is a key frame.
//
// Images (flag 3) are taken every Image.Interval from the frames read,
// whatever happens to the H264 stream, scaled and JPEG-encoded (or passed
// through when the camera delivers MJPEG of the right size). A refused
// image is retried with the next frame.
//
// # Timestamps and sequence numbers
//
// Every frame carries its capture time (camera.Frame.TS, the agent clock's
// Mono) in microseconds, strictly increasing per flag. Sequence numbers
// count frames offered to the lane, H264 and images together (the
// protocol numbers per kind): a gap means a frame the lane refused.
//
// # Concurrency
//
// Run is called once; it reads the camera, encodes and sends on its own
// goroutine (the video lane's only producer). RequestKeyframe,
// LinkChanged and Stats may be called from any goroutine.
package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	stdjpeg "image/jpeg"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/codec/jpeg"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// Sink is the uplink's lossy video lane; uplink.Client implements it.
// SendVideo must not block; it returns false when the frame was refused.
type Sink interface {
	SendVideo(h protocol.Header, payload []byte) bool
}

// DepthReporter is an optional Sink capability: how many frames wait in
// the lane. With it the pipeline resumes after a drop as soon as the lane
// is empty instead of backing off blindly.
type DepthReporter interface {
	VideoQueueDepth() int
}

// EncoderFactory builds the H264 encoder (h264.New in production).
type EncoderFactory func(h264.Config) (h264.Encoder, error)

// Config configures a Pipeline.
type Config struct {
	H264  H264Config
	Image ImageConfig
	// MaxFrameBytes is the largest payload the sink accepts (the uplink's
	// VideoMax); bigger frames are dropped and counted. 0: 512 KiB.
	MaxFrameBytes int
}

// H264Config configures the H264 stream.
type H264Config struct {
	Enabled bool
	// FPS of the stream; frames beyond it are skipped. 0: the camera's.
	FPS float64
	// Encoder settings; Width, Height and FPS are filled from the camera
	// and FPS above.
	Encoder h264.Config
	// Passthrough sends camera-native H264 as it is (no re-encoding).
	// When the camera delivers H264 it must be true: the agent has no
	// H264 decoder.
	Passthrough bool
}

// ImageConfig configures the still image stream.
type ImageConfig struct {
	// Interval between images; 0 disables the stream.
	Interval time.Duration
	// Size of the images; 0: the camera's. MJPEG from the camera at this
	// size is passed through.
	Width, Height int
	Quality       int // JPEG quality 1..100; 0: 80
}

// Errors.
var (
	ErrConfig = errors.New("video: invalid configuration")
)

// Stats are the pipeline's counters.
type Stats struct {
	Captured      int64 // frames read from the camera
	Encoded       int64 // H264 access units produced by the encoder
	Sent          int64 // H264 frames accepted by the lane
	Dropped       int64 // H264 frames captured but not sent (lane full, skipped to the next key frame, errors)
	LaneFull      int64 // of Dropped: refused by the lane
	KeyframesSent int64
	KeyRequests   int64 // RequestKeyframe calls
	ImagesSent    int64
	ImagesDropped int64
	// LastKeyRequest is when RequestKeyframe was last called (clock
	// Mono), 0 if never.
	LastKeyRequest time.Duration
}

// Pipeline streams one camera to a Sink.
type Pipeline struct {
	cfg  Config
	cam  camera.Camera
	mode camera.Mode
	sink Sink
	clk  clock.Clock
	log  *slog.Logger
	enc  h264.Encoder

	keyReq       atomic.Bool
	keyReqAt     atomic.Int64
	resync       atomic.Bool
	running      atomic.Bool
	keyRequestsN atomic.Int64

	m struct {
		captured, encoded, sent, dropped, laneFull, decimated *metrics.Counter
		keyframes, keyRequests, imagesSent, imagesDropped     *metrics.Counter
		encodeErrors, captureErrors, encodeMicros, oversize   *metrics.Counter
	}

	// State owned by the Run goroutine.
	h264Period time.Duration
	tolerance  time.Duration // half a camera frame period: capture jitter
	nextH264   time.Duration
	nextImage  time.Duration
	waitKey    bool
	backoff    int // frames to wait before the next recovery attempt
	waited     int
	seq        uint32
	lastTS     [2]int64 // per flag: H264, image
	raw        *image.YCbCr
	scaled     *image.YCbCr
	jpg        jpeg.Encoder
	norm       []byte
	jpegBuf    bytes.Reader
	dropLogged time.Time
}

// New returns a pipeline streaming cam (which it owns from now on: Run
// closes it) to sink. newEncoder may be nil (h264.New). reg and log may
// be nil.
func New(cfg Config, cam camera.Camera, newEncoder EncoderFactory, sink Sink, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*Pipeline, error) {
	if cam == nil || sink == nil || clk == nil {
		return nil, errors.New("video: New needs a camera, a sink and a clock")
	}
	if newEncoder == nil {
		newEncoder = h264.New
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = 512 << 10
	}
	mode := cam.Mode()
	p := &Pipeline{cfg: cfg, cam: cam, mode: mode, sink: sink, clk: clk, log: log, lastTS: [2]int64{math.MinInt64, math.MinInt64}}
	if mode.FPS > 0 {
		p.tolerance = time.Duration(float64(time.Second) / mode.FPS / 2)
	}
	if !cfg.H264.Enabled && cfg.Image.Interval <= 0 {
		return nil, fmt.Errorf("%w: both the H264 stream and the image stream are disabled", ErrConfig)
	}
	if cfg.Image.Interval < 0 {
		return nil, fmt.Errorf("%w: image interval %v is negative", ErrConfig, cfg.Image.Interval)
	}
	if cfg.Image.Width < 0 || cfg.Image.Height < 0 || cfg.Image.Width%2 != 0 || cfg.Image.Height%2 != 0 || (cfg.Image.Width == 0) != (cfg.Image.Height == 0) {
		return nil, fmt.Errorf("%w: image size %dx%d, want both even and positive, or both 0 (camera size)", ErrConfig, cfg.Image.Width, cfg.Image.Height)
	}
	if cfg.Image.Quality < 0 || cfg.Image.Quality > 100 {
		return nil, fmt.Errorf("%w: image quality %d, want 1..100", ErrConfig, cfg.Image.Quality)
	}
	if cfg.Image.Width == 0 {
		p.cfg.Image.Width, p.cfg.Image.Height = mode.Width, mode.Height
	}
	p.jpg.Quality = cfg.Image.Quality
	if mode.Format == camera.FormatH264 {
		if cfg.Image.Interval > 0 {
			return nil, fmt.Errorf("%w: the camera streams %v: the image stream needs raw or MJPEG frames (no H264 decoder)", ErrConfig, mode)
		}
		if !cfg.H264.Passthrough {
			return nil, fmt.Errorf("%w: the camera streams %v and passthrough is off: re-encoding needs an H264 decoder the agent does not have", ErrConfig, mode)
		}
	} else if cfg.H264.Enabled {
		ec := cfg.H264.Encoder
		ec.Width, ec.Height = mode.Width, mode.Height
		ec.FPS = cfg.H264.FPS
		if ec.FPS == 0 {
			ec.FPS = mode.FPS
		}
		if ec.FPS == 0 {
			ec.FPS = 15
		}
		enc, err := newEncoder(ec)
		if err != nil {
			return nil, fmt.Errorf("video: H264 encoder for %v: %w", mode, err)
		}
		p.enc = enc
	}
	if cfg.H264.FPS > 0 && (mode.FPS == 0 || cfg.H264.FPS < mode.FPS-0.01) {
		p.h264Period = time.Duration(float64(time.Second) / cfg.H264.FPS)
	}
	p.m.captured = reg.Counter("robot_agent_video_frames_captured_total", "Frames read from the camera.")
	p.m.encoded = reg.Counter("robot_agent_video_frames_encoded_total", "H264 access units produced by the encoder.")
	p.m.sent = reg.Counter("robot_agent_video_frames_sent_total", "H264 frames accepted by the uplink video lane.")
	p.m.dropped = reg.Counter("robot_agent_video_frames_dropped_total", "H264 frames captured but not sent (lane full, skipped to the next key frame, errors).")
	p.m.laneFull = reg.Counter("robot_agent_video_frames_lane_full_total", "H264 frames the uplink video lane refused (full).")
	p.m.decimated = reg.Counter("robot_agent_video_frames_decimated_total", "Camera frames skipped to hold the configured H264 frame rate.")
	p.m.keyframes = reg.Counter("robot_agent_video_keyframes_sent_total", "H264 key frames accepted by the lane.")
	p.m.keyRequests = reg.Counter("robot_agent_video_keyframe_requests_total", "Key frames requested by the gateway.")
	p.m.imagesSent = reg.Counter("robot_agent_video_images_sent_total", "JPEG images accepted by the lane.")
	p.m.imagesDropped = reg.Counter("robot_agent_video_images_dropped_total", "JPEG images the lane refused or that failed to encode.")
	p.m.encodeErrors = reg.Counter("robot_agent_video_encode_errors_total", "Frames that failed to decode or encode.")
	p.m.captureErrors = reg.Counter("robot_agent_video_capture_errors_total", "Camera read errors.")
	p.m.encodeMicros = reg.Counter("robot_agent_video_encode_microseconds_total", "Time spent encoding H264 and JPEG.")
	p.m.oversize = reg.Counter("robot_agent_video_frames_oversize_total", "Frames larger than the uplink accepts.")
	return p, nil
}

// Mode returns the camera's mode.
func (p *Pipeline) Mode() camera.Mode { return p.mode }

// RequestKeyframe makes the next H264 frame sent a key frame. It never
// blocks. The gateway's keyframe_request lands here.
func (p *Pipeline) RequestKeyframe() {
	p.keyReqAt.Store(int64(p.clk.Mono()))
	p.keyReq.Store(true)
	p.m.keyRequests.Inc()
}

// LinkChanged implements uplink.LinkObserver: a new gateway session must
// start at a key frame.
func (p *Pipeline) LinkChanged(up bool, _ string) {
	if up {
		p.resync.Store(true)
	}
}

// Stats returns the counters.
func (p *Pipeline) Stats() Stats {
	return Stats{
		Captured: p.m.captured.Value(), Encoded: p.m.encoded.Value(), Sent: p.m.sent.Value(),
		Dropped: p.m.dropped.Value(), LaneFull: p.m.laneFull.Value(), KeyframesSent: p.m.keyframes.Value(),
		KeyRequests: p.m.keyRequests.Value(), ImagesSent: p.m.imagesSent.Value(), ImagesDropped: p.m.imagesDropped.Value(),
		LastKeyRequest: time.Duration(p.keyReqAt.Load()),
	}
}

// maxConsecutiveErrors ends Run when the camera keeps failing.
const maxConsecutiveErrors = 10

// Run streams until ctx is done or the camera fails for good, then closes
// the camera and the encoder. It returns nil when ctx ended it.
func (p *Pipeline) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("video: Run called twice")
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			p.cam.Close() // unblocks Read
		case <-stop:
		}
	}()
	defer func() {
		p.cam.Close()
		if p.enc != nil {
			p.enc.Close()
		}
	}()
	p.log.Info("video: streaming", "mode", p.mode.String(), "h264", p.cfg.H264.Enabled, "passthrough", p.mode.Format == camera.FormatH264,
		"image_interval", p.cfg.Image.Interval, "image_size", fmt.Sprintf("%dx%d", p.cfg.Image.Width, p.cfg.Image.Height))
	var f camera.Frame
	errs := 0
	for {
		err := p.cam.Read(&f)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			p.m.captureErrors.Inc()
			if errors.Is(err, hw.ErrClosed) || errors.Is(err, hw.ErrDeviceLost) {
				return fmt.Errorf("video: camera stopped: %w", err)
			}
			if errs++; errs >= maxConsecutiveErrors {
				return fmt.Errorf("video: camera failed %d times in a row: %w", errs, err)
			}
			p.log.Warn("video: camera read failed", "err", err)
			continue
		}
		errs = 0
		p.m.captured.Inc()
		p.frame(&f)
	}
}

// frame handles one captured frame.
func (p *Pipeline) frame(f *camera.Frame) {
	imageDue := p.cfg.Image.Interval > 0 && f.TS >= p.nextImage-p.tolerance
	h264Due := p.cfg.H264.Enabled
	if h264Due && p.h264Period > 0 {
		if f.TS < p.nextH264-p.tolerance {
			h264Due = false
			p.m.decimated.Inc()
		} else {
			p.nextH264 += p.h264Period
			if p.nextH264 <= f.TS-p.tolerance { // fell behind: restart the schedule
				p.nextH264 = f.TS + p.h264Period
			}
		}
	}
	if !h264Due && !imageDue {
		return
	}
	// Raw picture, when something needs one.
	var pic *image.YCbCr
	needRaw := (h264Due && p.enc != nil) || (imageDue && !p.imagePassthrough(f))
	if needRaw {
		switch {
		case f.Format == camera.FormatI420:
			pic = f.Image
		case f.Format == camera.FormatMJPEG:
			var err error
			pic, err = p.decodeMJPEG(f.Data)
			if err != nil {
				p.m.encodeErrors.Inc()
				p.log.Warn("video: undecodable MJPEG frame", "err", err)
				if h264Due {
					p.m.dropped.Inc()
				}
				return
			}
		}
	}
	if h264Due {
		p.sendH264(f, pic)
	}
	if imageDue {
		p.sendImage(f, pic)
	}
}

func (p *Pipeline) imagePassthrough(f *camera.Frame) bool {
	return f.Format == camera.FormatMJPEG && p.mode.Width == p.cfg.Image.Width && p.mode.Height == p.cfg.Image.Height
}

func (p *Pipeline) decodeMJPEG(b []byte) (*image.YCbCr, error) {
	nb, err := jpeg.Normalize(p.norm, b)
	if err != nil {
		return nil, err
	}
	if len(nb) > 0 && len(b) > 0 && &nb[0] != &b[0] {
		p.norm = nb
	}
	p.jpegBuf.Reset(nb)
	img, err := stdjpeg.Decode(&p.jpegBuf)
	if err != nil {
		return nil, fmt.Errorf("video: decode MJPEG: %w", err)
	}
	p.raw, err = camera.ToI420(p.raw, img)
	return p.raw, err
}

// canRecover reports whether to try a key frame now after a drop.
func (p *Pipeline) canRecover() bool {
	if d, ok := p.sink.(DepthReporter); ok {
		return d.VideoQueueDepth() == 0
	}
	if p.waited < p.backoff {
		p.waited++
		return false
	}
	return true
}

func (p *Pipeline) sendH264(f *camera.Frame, pic *image.YCbCr) {
	if p.resync.Swap(false) {
		p.enterWaitKey(false)
		p.backoff = 0
	}
	passthrough := p.enc == nil
	force := false
	if p.waitKey {
		// Encoding is skipped until the lane can take a key frame;
		// camera key frames come when they come and are always tried.
		if !passthrough && !p.canRecover() {
			p.m.dropped.Inc()
			return
		}
		force = true
	}
	if p.keyReq.Swap(false) {
		force = true
	}
	var au h264.AccessUnit
	if passthrough {
		au = h264.AccessUnit{Data: f.Data, Key: h264.Inspect(f.Data).Key()}
		if force && !au.Key {
			// Keep asking the camera until a key frame comes.
			p.askCamera()
			p.keyReq.Store(true)
		}
	} else {
		t0 := time.Now()
		var err error
		au, err = p.enc.Encode(pic, f.TS, force)
		p.m.encodeMicros.Add(time.Since(t0).Microseconds())
		if err != nil {
			p.m.encodeErrors.Inc()
			p.m.dropped.Inc()
			p.enterWaitKey(true)
			p.log.Warn("video: H264 encode failed", "err", err)
			return
		}
		p.m.encoded.Inc()
	}
	if !au.Key {
		if p.waitKey {
			p.m.dropped.Inc() // mid-GOP: useless without the frames before it
			return
		}
		if p.keyReq.Load() {
			// A key frame was requested while this one was encoded: the
			// next frame sent must be the key frame.
			p.m.dropped.Inc()
			return
		}
	}
	if len(au.Data) > p.cfg.MaxFrameBytes {
		p.m.oversize.Inc()
		p.m.dropped.Inc()
		p.enterWaitKey(true)
		p.logDrop("video: H264 frame larger than the uplink accepts; lower bitrate_kbps or vbv_ms", "bytes", len(au.Data), "max", p.cfg.MaxFrameBytes)
		return
	}
	h := protocol.Header{Kind: protocol.KindVideo, Flag: protocol.FlagH264, Seq: p.seq, Timestamp: p.stamp(0, f.TS)}
	if au.Key {
		h.Mark = protocol.MarkKeyFrame
	}
	p.seq++
	if !p.sink.SendVideo(h, au.Data) {
		p.m.laneFull.Inc()
		p.m.dropped.Inc()
		if p.waitKey {
			p.backoff = min(max(2*p.backoff, 1), p.maxBackoff())
		} else {
			p.backoff = 0
		}
		p.enterWaitKey(true)
		return
	}
	p.m.sent.Inc()
	if au.Key {
		p.m.keyframes.Inc()
		p.waitKey = false
		p.backoff = 0
	}
}

// enterWaitKey starts skipping frames until a key frame; restart begins a
// new back-off wait.
func (p *Pipeline) enterWaitKey(restart bool) {
	p.waitKey = true
	if restart {
		p.waited = 0
	}
	if p.enc == nil {
		p.askCamera()
	}
}

// askCamera asks a camera-native H264 stream for a key frame, if the
// camera can be asked.
func (p *Pipeline) askCamera() {
	if kr, ok := p.cam.(camera.KeyframeRequester); ok {
		if err := kr.RequestKeyframe(); err != nil {
			p.log.Debug("video: camera cannot force a key frame", "err", err)
		}
	}
}

func (p *Pipeline) maxBackoff() int {
	fps := p.mode.FPS
	if p.cfg.H264.FPS > 0 {
		fps = p.cfg.H264.FPS
	}
	if fps < 1 {
		fps = 15
	}
	return int(fps)
}

// stamp returns ts in µs, strictly after the last one of the same flag.
func (p *Pipeline) stamp(i int, ts time.Duration) int64 {
	us := ts.Microseconds()
	if us <= p.lastTS[i] {
		us = p.lastTS[i] + 1
	}
	p.lastTS[i] = us
	return us
}

func (p *Pipeline) sendImage(f *camera.Frame, pic *image.YCbCr) {
	var payload []byte
	if p.imagePassthrough(f) {
		nb, err := jpeg.Normalize(p.norm, f.Data)
		if err != nil {
			p.m.imagesDropped.Inc()
			p.m.encodeErrors.Inc()
			return
		}
		if len(nb) > 0 && &nb[0] != &f.Data[0] {
			p.norm = nb
		}
		payload = nb
	} else {
		src := pic
		if src.Rect.Dx() != p.cfg.Image.Width || src.Rect.Dy() != p.cfg.Image.Height {
			p.scaled = camera.EnsureI420(p.scaled, p.cfg.Image.Width, p.cfg.Image.Height)
			camera.Scale(p.scaled, src)
			src = p.scaled
		}
		t0 := time.Now()
		b, err := p.jpg.Encode(src)
		p.m.encodeMicros.Add(time.Since(t0).Microseconds())
		if err != nil {
			p.m.imagesDropped.Inc()
			p.m.encodeErrors.Inc()
			p.log.Warn("video: JPEG encode failed", "err", err)
			return
		}
		payload = b
	}
	if len(payload) > p.cfg.MaxFrameBytes {
		p.m.oversize.Inc()
		p.m.imagesDropped.Inc()
		p.logDrop("video: image larger than the uplink accepts; lower camera.image size or quality", "bytes", len(payload), "max", p.cfg.MaxFrameBytes)
		p.nextImage = f.TS + p.cfg.Image.Interval
		return
	}
	// Every JPEG stands alone: mark bit 0 is set on each (§4.6).
	h := protocol.Header{Kind: protocol.KindVideo, Flag: protocol.FlagImage, Mark: protocol.MarkKeyFrame, Seq: p.seq, Timestamp: p.stamp(1, f.TS)}
	p.seq++
	if !p.sink.SendVideo(h, payload) {
		p.m.imagesDropped.Inc() // retried with the next frame
		return
	}
	p.m.imagesSent.Inc()
	// Next image one interval after this one's schedule, or after this
	// frame if the schedule fell behind.
	p.nextImage += p.cfg.Image.Interval
	if p.nextImage <= f.TS-p.tolerance {
		p.nextImage = f.TS + p.cfg.Image.Interval
	}
}

func (p *Pipeline) logDrop(msg string, args ...any) {
	if now := time.Now(); now.Sub(p.dropLogged) > 10*time.Second {
		p.dropLogged = now
		p.log.Warn(msg, args...)
	}
}
