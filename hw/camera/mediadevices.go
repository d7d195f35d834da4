package camera

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pion/mediadevices/pkg/driver"
	_ "github.com/pion/mediadevices/pkg/driver/videotest" // registers the "VideoTest" driver
	"github.com/pion/mediadevices/pkg/frame"
	"github.com/pion/mediadevices/pkg/io/video"
	"github.com/pion/mediadevices/pkg/prop"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// VideoTestDevice is the Device name that selects mediadevices' synthetic
// video test driver.
const VideoTestDevice = "videotest"

// mdFormats maps raw formats to mediadevices frame formats.
var mdFormats = map[PixelFormat]frame.Format{
	FormatI420: frame.FormatI420,
	FormatNV12: frame.FormatNV12,
	FormatNV21: frame.FormatNV21,
	FormatYUYV: frame.FormatYUYV,
	FormatUYVY: frame.FormatUYVY,
}

// mdCamera adapts a mediadevices video driver (V4L2 camera, video test)
// to Camera. Frames are converted to I420 into the caller's Frame.
type mdCamera struct {
	drv  driver.Driver
	r    video.Reader
	mode Mode
	clk  clock.Clock

	readMu sync.Mutex // held by Read; Close takes it to wait for a read in flight
	closed atomic.Bool
	seq    uint64
	once   sync.Once
}

// openDriver opens d and starts it streaming in mode m (a raw format).
func openDriver(d driver.Driver, m Mode, clk clock.Clock) (*mdCamera, error) {
	rec, ok := d.(driver.VideoRecorder)
	if !ok {
		return nil, fmt.Errorf("camera: mediadevices driver %q is not a video recorder", d.Info().Label)
	}
	ff, ok := mdFormats[m.Format]
	if !ok {
		return nil, fmt.Errorf("camera: mediadevices cannot deliver %s frames raw", m.Format)
	}
	if err := d.Open(); err != nil {
		return nil, fmt.Errorf("camera: open %q: %w", d.Info().Label, err)
	}
	r, err := rec.VideoRecord(prop.Media{Video: prop.Video{
		Width: m.Width, Height: m.Height, FrameRate: float32(m.FPS), FrameFormat: ff,
	}})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("camera: start %q in %v: %w", d.Info().Label, m, err)
	}
	return &mdCamera{drv: d, r: r, mode: m, clk: clk}, nil
}

// OpenVideoTest opens mediadevices' synthetic video test driver (colour
// bars over noise, paced by the wall clock, whatever clk says) at the
// given size and frame rate. Frames carry clk.Mono() at delivery. Only one
// may be open at a time in a process (the driver is a singleton).
func OpenVideoTest(width, height int, fps float64, clk clock.Clock) (Camera, error) {
	if width < 16 || height < 16 || width%2 != 0 || height%2 != 0 || width > 4096 || height > 4096 {
		return nil, fmt.Errorf("camera: videotest size %dx%d, want even sizes in 16..4096", width, height)
	}
	if !(fps > 0 && fps <= 240) {
		return nil, fmt.Errorf("camera: videotest fps %v, want 0..240", fps)
	}
	ds := driver.GetManager().Query(func(d driver.Driver) bool {
		return d.Info().Label == "VideoTest" && d.Info().DeviceType == driver.Camera
	})
	if len(ds) == 0 {
		return nil, fmt.Errorf("camera: mediadevices video test driver not registered: %w", hw.ErrNoDevice)
	}
	return openDriver(ds[0], Mode{Width: width, Height: height, FPS: fps, Format: FormatYUYV}, clk)
}

func (c *mdCamera) Mode() Mode { return c.mode }

func (c *mdCamera) Read(f *Frame) error {
	if c.closed.Load() {
		return hw.ErrClosed
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.closed.Load() {
		return hw.ErrClosed
	}
	img, release, err := c.r.Read()
	ts := c.clk.Mono()
	if err != nil {
		if c.closed.Load() {
			return hw.ErrClosed
		}
		return fmt.Errorf("camera: read %q: %w", c.drv.Info().Label, err)
	}
	defer release()
	if c.closed.Load() {
		return hw.ErrClosed
	}
	f.Image, err = ToI420(f.Image, img)
	if err != nil {
		return err
	}
	f.Seq, f.TS, f.Format, f.Data = c.seq, ts, FormatI420, f.Data[:0]
	c.seq++
	return nil
}

// Close stops the driver once a read in flight has returned: mediadevices'
// readers do not all wake up when their driver closes under them.
func (c *mdCamera) Close() error {
	var err error
	c.once.Do(func() {
		c.closed.Store(true)
		c.readMu.Lock()
		defer c.readMu.Unlock()
		if e := c.drv.Close(); e != nil && !errors.Is(e, hw.ErrClosed) {
			err = fmt.Errorf("camera: close %q: %w", c.drv.Info().Label, e)
		}
	})
	return err
}
