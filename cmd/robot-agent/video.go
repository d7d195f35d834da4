package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/video"
)

// cameraConfig is the "camera" section of the configuration.
type cameraConfig struct {
	Enabled bool `yaml:"enabled"`
	// Device selects the camera: "" the first one (videotest with --sim),
	// "sim" (built-in test pattern), "videotest" (mediadevices' synthetic
	// driver), or a /dev/v4l/by-id or by-path name, card name, bus info or
	// /dev/videoN.
	Device string  `yaml:"device"`
	Width  int     `yaml:"width"`
	Height int     `yaml:"height"`
	FPS    float64 `yaml:"fps"`
	// Format: auto (raw preferred, then MJPEG; H264 when the image stream
	// is off and passthrough on), raw, mjpeg, h264, or a pixel format
	// (yuyv, nv12, i420...).
	Format string            `yaml:"format"`
	H264   cameraH264Config  `yaml:"h264"`
	Image  cameraImageConfig `yaml:"image"`
}

type cameraH264Config struct {
	Enabled     bool    `yaml:"enabled"`
	FPS         float64 `yaml:"fps"` // 0: the camera's
	BitrateKbps int     `yaml:"bitrate_kbps"`
	GOP         int     `yaml:"gop"` // frames; 0: 2 s
	Profile     string  `yaml:"profile"`
	Preset      string  `yaml:"preset"`
	VBVMS       int     `yaml:"vbv_ms"`
	Threads     int     `yaml:"threads"`
	Passthrough bool    `yaml:"passthrough"`
}

type cameraImageConfig struct {
	IntervalMS int `yaml:"interval_ms"` // 0 disables the image stream
	Width      int `yaml:"width"`       // 0: camera size
	Height     int `yaml:"height"`
	Quality    int `yaml:"quality"`
}

func defaultCameraConfig() cameraConfig {
	return cameraConfig{
		Width: 640, Height: 480, FPS: 15, Format: "auto",
		H264:  cameraH264Config{Enabled: true, BitrateKbps: 800, Profile: "baseline", Preset: "ultrafast", VBVMS: 500, Passthrough: true},
		Image: cameraImageConfig{IntervalMS: 1000, Quality: 80},
	}
}

// Validate checks c and returns every problem, each a *field.Error under
// camera.
func (c cameraConfig) Validate() error {
	var errs field.List
	bad := func(path string, v any, want string) { errs.Add("camera."+path, v, want, "") }
	// The camera's own options: package camera validates them.
	errs.Append(field.Under("camera", camera.Want{Width: c.Width, Height: c.Height, FPS: c.FPS}.Validate()))
	if c.H264.FPS < 0 || c.H264.FPS > c.FPS {
		bad("h264.fps", c.H264.FPS, fmt.Sprintf("want 0 (camera rate) up to camera.fps %v", c.FPS))
	}
	if c.Image.IntervalMS < 0 || (c.Image.IntervalMS > 0 && c.Image.IntervalMS < 20) {
		bad("image.interval_ms", c.Image.IntervalMS, "want 0 (off) or at least 20")
	}
	switch {
	case (c.Image.Width == 0) != (c.Image.Height == 0) || c.Image.Width < 0 || c.Image.Height < 0 || c.Image.Width%2 != 0 || c.Image.Height%2 != 0:
		bad("image.width", fmt.Sprintf("%dx%d", c.Image.Width, c.Image.Height), "want width and height both even, or both 0 (camera size)")
	case c.Image.Width > c.Width || c.Image.Height > c.Height:
		bad("image.width", fmt.Sprintf("%dx%d", c.Image.Width, c.Image.Height), fmt.Sprintf("images are scaled down from the camera's %dx%d, not up", c.Width, c.Height))
	}
	if c.Image.Quality < 1 || c.Image.Quality > 100 {
		bad("image.quality", c.Image.Quality, "want 1..100")
	}
	if !c.H264.Enabled && c.Image.IntervalMS == 0 {
		errs.Add("camera.h264.enabled", false, "and image.interval_ms is 0: nothing to stream", "set camera.enabled: false instead")
	}
	if _, err := c.formats(); err != nil {
		errs.Append(err)
	}
	if c.H264.Enabled {
		ec := c.encoderConfig()
		ec.Width, ec.Height, ec.FPS = c.Width, c.Height, c.FPS
		if c.H264.FPS > 0 {
			ec.FPS = c.H264.FPS
		}
		if err := ec.WithDefaults().Validate(); err != nil {
			errs.Add("camera.h264", nil, strings.TrimPrefix(err.Error(), h264.ErrConfig.Error()+": "), "")
		}
	}
	return errs.Err()
}

// checkBuild reports what c asks for that this binary cannot do: H264
// encoding without an encoder built in. Only a camera that encodes H264
// itself (format h264, passed through) streams H264 without one.
func (c cameraConfig) checkBuild() error {
	if c.Enabled && c.H264.Enabled && h264.Backend == "" && strings.ToLower(c.Format) != "h264" {
		return field.New("camera.h264.enabled", true, "this binary has no H264 encoder (built without cgo or libx264)",
			"install the full build (make build with libx264-dev), use camera.format: h264 for a camera that encodes H264 itself, or set camera.h264.enabled: false and stream images")
	}
	return nil
}

func (c cameraConfig) encoderConfig() h264.Config {
	return h264.Config{BitrateKbps: c.H264.BitrateKbps, GOP: c.H264.GOP, Profile: h264.Profile(c.H264.Profile),
		Preset: c.H264.Preset, VBVMillis: c.H264.VBVMS, Threads: c.H264.Threads}
}

var rawFormats = []camera.PixelFormat{camera.FormatI420, camera.FormatNV12, camera.FormatYUYV, camera.FormatUYVY, camera.FormatNV21}

// formats returns the pixel formats to ask the camera for, in order.
func (c cameraConfig) formats() ([]camera.PixelFormat, error) {
	switch strings.ToLower(c.Format) {
	case "", "auto":
		f := append(append([]camera.PixelFormat(nil), rawFormats...), camera.FormatMJPEG)
		if c.H264.Enabled && c.H264.Passthrough && c.Image.IntervalMS == 0 {
			f = append([]camera.PixelFormat{camera.FormatH264}, f...)
		}
		return f, nil
	case "raw":
		return rawFormats, nil
	}
	pf, err := camera.ParseFormat(c.Format)
	if err != nil {
		return nil, field.New("camera.format", c.Format, "want auto, raw, mjpeg, h264, yuyv, nv12, nv21, uyvy or i420", "")
	}
	if pf == camera.FormatH264 && (!c.H264.Enabled || !c.H264.Passthrough || c.Image.IntervalMS > 0) {
		return nil, field.New("camera.format", c.Format, "needs camera.h264.enabled and camera.h264.passthrough true and camera.image.interval_ms 0", "there is no H264 decoder for images")
	}
	return []camera.PixelFormat{pf}, nil
}

// loadCameraConfig decodes the "camera" section over the defaults.
func loadCameraConfig(cfg config.Config) (cameraConfig, error) {
	cc := defaultCameraConfig()
	if _, err := config.DecodeSection(cfg.Extra, "camera", &cc); err != nil {
		return cc, err
	}
	if !cc.Enabled {
		return cc, nil
	}
	return cc, cc.Validate()
}

// videoPart is the running video pipeline.
type videoPart struct {
	cfg    cameraConfig
	p      *video.Pipeline
	cancel context.CancelFunc
	done   chan struct{}
}

// setupVideo builds the video pipeline from the camera section; it
// returns nil when the camera is not enabled. Call it from newAgent once
// a.client and a.control exist (it registers the pipeline as the
// keyframe_request handler and as a link observer, before client.Run).
func (a *agent) setupVideo() (*videoPart, error) {
	cc, err := loadCameraConfig(a.cfg)
	if err != nil || !cc.Enabled {
		return nil, err
	}
	return newVideoPart(a, cc)
}

// openCamera opens the camera cc selects.
func openCamera(a *agent, cc cameraConfig) (camera.Camera, error) {
	device := cc.Device
	if device == "" && a.opts.sim {
		device = camera.VideoTestDevice
	}
	switch device {
	case "sim":
		f := camera.FormatI420
		if fs, _ := cc.formats(); len(fs) == 1 && fs[0] == camera.FormatMJPEG {
			f = camera.FormatMJPEG
		}
		return camera.NewSim(camera.SimConfig{Width: cc.Width, Height: cc.Height, FPS: cc.FPS, Format: f}, a.clk)
	case camera.VideoTestDevice:
		return camera.OpenVideoTest(cc.Width, cc.Height, cc.FPS, a.clk)
	}
	fs, err := cc.formats()
	if err != nil {
		return nil, err
	}
	return camera.Open(device, camera.Want{Width: cc.Width, Height: cc.Height, FPS: cc.FPS, Formats: fs}, a.clk)
}

// newVideoPart opens the camera and builds the pipeline for cc.
func newVideoPart(a *agent, cc cameraConfig) (*videoPart, error) {
	cam, err := openCamera(a, cc)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "camera: ") {
			err = fmt.Errorf("camera: %w", err)
		}
		return nil, err
	}
	m := cam.Mode()
	if m.Width != cc.Width || m.Height != cc.Height || (m.FPS > 0 && m.FPS < cc.FPS-0.01) {
		a.log.Warn("camera: mode differs from the configuration", "want", fmt.Sprintf("%dx%d@%g", cc.Width, cc.Height, cc.FPS), "got", m.String())
	}
	vc := video.Config{
		H264: video.H264Config{Enabled: cc.H264.Enabled, FPS: cc.H264.FPS, Encoder: cc.encoderConfig(), Passthrough: cc.H264.Passthrough},
		Image: video.ImageConfig{Interval: time.Duration(cc.Image.IntervalMS) * time.Millisecond,
			Width: cc.Image.Width, Height: cc.Image.Height, Quality: cc.Image.Quality},
		MaxFrameBytes: 512 << 10, // uplink.Config.VideoMax default
	}
	if vc.H264.FPS == 0 && m.FPS > cc.FPS+0.01 {
		vc.H264.FPS = cc.FPS // the camera runs faster than asked
	}
	p, err := video.New(vc, cam, nil, a.client, a.clk, a.reg, a.log)
	if err != nil {
		cam.Close()
		return nil, err
	}
	a.control.video = p
	a.client.AddObserver(p)
	a.closers = append(a.closers, cam.Close)
	a.log.Info("camera ready", "device", cc.Device, "mode", m.String(), "h264", cc.H264.Enabled, "encoder", h264.Backend,
		"image_interval_ms", cc.Image.IntervalMS)
	return &videoPart{cfg: cc, p: p}, nil
}

// start runs the pipeline until stop. Nil-safe.
func (v *videoPart) start(a *agent) {
	if v == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel, v.done = cancel, make(chan struct{})
	go func() {
		defer close(v.done)
		if err := v.p.Run(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("video stopped; the agent goes on without video", "err", err)
		}
	}()
}

// stop ends the pipeline and waits for it (at most 2 s). Nil-safe.
func (v *videoPart) stop() {
	if v == nil || v.cancel == nil {
		return
	}
	v.cancel()
	select {
	case <-v.done:
	case <-time.After(2 * time.Second):
	}
	v.cancel = nil
}

// writeSummary adds the video line to the run summary. Nil-safe.
func (v *videoPart) writeSummary(w io.Writer) {
	if v == nil {
		return
	}
	s := v.p.Stats()
	fmt.Fprintf(w, "  video:     %v: %d frames captured, %d encoded, %d sent (%d key), %d dropped (%d lane full); %d images sent, %d dropped\n",
		v.p.Mode(), s.Captured, s.Encoded, s.Sent, s.KeyframesSent, s.Dropped, s.LaneFull, s.ImagesSent, s.ImagesDropped)
}

// listCameras prints the cameras and their modes for `robot-agent
// devices`. Without cgo it says camera support is not built in.
func listCameras(w io.Writer) error {
	infos, err := camera.List()
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		fmt.Fprintln(w, "cameras: none found (no V4L2 capture device under /dev/video*)")
		return nil
	}
	fmt.Fprintln(w, "cameras:")
	for _, in := range infos {
		fmt.Fprintf(w, "  %s  %q  bus %q\n", in.Path, in.Name, in.Bus)
		if in.ByID != "" {
			fmt.Fprintf(w, "      by-id:   %s\n", in.ByID)
		}
		if in.ByPath != "" {
			fmt.Fprintf(w, "      by-path: %s\n", in.ByPath)
		}
		byFmt := map[camera.PixelFormat][]string{}
		var order []camera.PixelFormat
		for _, m := range in.Modes {
			if _, ok := byFmt[m.Format]; !ok {
				order = append(order, m.Format)
			}
			s := fmt.Sprintf("%dx%d", m.Width, m.Height)
			if m.FPS > 0 {
				s += fmt.Sprintf("@%g", m.FPS)
			}
			byFmt[m.Format] = append(byFmt[m.Format], s)
		}
		for _, f := range order {
			fmt.Fprintf(w, "      %-5s %s\n", f, strings.Join(byFmt[f], " "))
		}
	}
	return nil
}
