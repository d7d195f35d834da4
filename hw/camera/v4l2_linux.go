//go:build linux && cgo

package camera

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blackjack/webcam"
	"github.com/pion/mediadevices/pkg/driver"
	mdcamera "github.com/pion/mediadevices/pkg/driver/camera" // V4L2 driver: registers /dev/video* at import

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/jpeg"
	"github.com/robot-agent/robot-agent/hw"
)

// Supported reports whether real cameras can be used by this binary.
const Supported = true

// commonSizes are tried against cameras that report a size range
// (stepwise) instead of a list.
var commonSizes = [][2]int{{160, 120}, {320, 240}, {640, 360}, {640, 480}, {800, 600}, {1024, 768}, {1280, 720}, {1280, 960}, {1920, 1080}}

// List returns the V4L2 capture devices and their modes, ordered by
// /dev/videoN number. Metadata nodes (which cannot capture) are left out.
func List() ([]Info, error) {
	paths, err := filepath.Glob("/dev/video*")
	if err != nil {
		return nil, fmt.Errorf("camera: list: %w", err)
	}
	sort.Slice(paths, func(i, j int) bool { return videoNum(paths[i]) < videoNum(paths[j]) })
	byID, byPath := links("/dev/v4l/by-id/*"), links("/dev/v4l/by-path/*")
	var out []Info
	for _, p := range paths {
		cam, err := webcam.Open(p)
		if err != nil {
			continue // not a capture node, or busy
		}
		info := Info{Path: p, ByID: byID[p], ByPath: byPath[p]}
		info.Name, _ = cam.GetName()
		info.Bus, _ = cam.GetBusInfo()
		info.Modes = modes(cam)
		cam.Close()
		out = append(out, info)
	}
	return out, nil
}

func videoNum(p string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "video"))
	if err != nil {
		return 1 << 30
	}
	return n
}

// links maps /dev/videoN to the name of the symlink matching pattern.
func links(pattern string) map[string]string {
	m := map[string]string{}
	ls, _ := filepath.Glob(pattern)
	for _, l := range ls {
		if t, err := filepath.EvalSymlinks(l); err == nil {
			if _, dup := m[t]; !dup {
				m[t] = filepath.Base(l)
			}
		}
	}
	return m
}

func fourcc(f webcam.PixelFormat) PixelFormat {
	b := []byte{byte(f), byte(f >> 8), byte(f >> 16), byte(f >> 24)}
	s := PixelFormat(strings.TrimRight(string(b), " \x00"))
	if s == "YU12" {
		return FormatI420
	}
	return s
}

func toFourcc(f PixelFormat) webcam.PixelFormat {
	if f == FormatI420 {
		f = "YU12"
	}
	s := string(f) + "    "
	return webcam.PixelFormat(uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24)
}

func modes(cam *webcam.Webcam) []Mode {
	var out []Mode
	for pf := range cam.GetSupportedFormats() {
		for _, fs := range cam.GetSupportedFrameSizes(pf) {
			var sizes [][2]int
			if fs.StepWidth == 0 || fs.StepHeight == 0 {
				sizes = [][2]int{{int(fs.MaxWidth), int(fs.MaxHeight)}}
			} else {
				for _, s := range commonSizes {
					if s[0] >= int(fs.MinWidth) && s[0] <= int(fs.MaxWidth) && s[1] >= int(fs.MinHeight) && s[1] <= int(fs.MaxHeight) &&
						(s[0]-int(fs.MinWidth))%int(fs.StepWidth) == 0 && (s[1]-int(fs.MinHeight))%int(fs.StepHeight) == 0 {
						sizes = append(sizes, s)
					}
				}
			}
			for _, s := range sizes {
				rates := cam.GetSupportedFramerates(pf, uint32(s[0]), uint32(s[1]))
				if len(rates) == 0 {
					out = append(out, Mode{Width: s[0], Height: s[1], Format: fourcc(pf)})
				}
				for _, r := range rates {
					// Discrete: one interval. Stepwise: its two ends.
					for _, iv := range [][2]uint32{{r.MaxNumerator, r.MaxDenominator}, {r.MinNumerator, r.MinDenominator}} {
						if iv[0] == 0 {
							continue
						}
						fps := float64(int(float64(iv[1])/float64(iv[0])*1000+0.5)) / 1000
						m := Mode{Width: s[0], Height: s[1], FPS: fps, Format: fourcc(pf)}
						if len(out) == 0 || out[len(out)-1] != m {
							out = append(out, m)
						}
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Format != b.Format {
			return a.Format < b.Format
		}
		if a.Width*a.Height != b.Width*b.Height {
			return a.Width*a.Height < b.Width*b.Height
		}
		return a.FPS > b.FPS
	})
	return out
}

// Open opens the real camera that device selects (see Info.Matches; ""
// for the first one) in the mode Negotiate picks from its modes for want.
// Raw modes stream through mediadevices' V4L2 driver, MJPEG and H264
// straight from V4L2.
func Open(device string, want Want, clk clock.Clock) (Camera, error) {
	infos, err := List()
	if err != nil {
		return nil, err
	}
	var sel []Info
	for _, in := range infos {
		if device == "" || in.Matches(device) {
			sel = append(sel, in)
		}
	}
	switch {
	case len(infos) == 0:
		return nil, fmt.Errorf("camera: no V4L2 capture device found (/dev/video*): %w", hw.ErrNoDevice)
	case len(sel) == 0:
		return nil, fmt.Errorf("camera: device %q matches none of %s: %w", device, names(infos), hw.ErrNoDevice)
	case len(sel) > 1 && device != "":
		return nil, fmt.Errorf("camera: device %q is ambiguous: it matches %s; use a by-id or by-path name", device, names(sel))
	}
	info := sel[0]
	mode, ok := Negotiate(info.Modes, want)
	if !ok {
		return nil, fmt.Errorf("camera: %s offers none of the formats %v (modes: %v)", info.Path, want.Formats, info.Modes)
	}
	if mode.Format.Raw() {
		// Raw frames through mediadevices' V4L2 driver, found by its
		// label "<name>;videoN".
		ds := driver.GetManager().Query(func(d driver.Driver) bool {
			return d.Info().DeviceType == driver.Camera && strings.HasSuffix(d.Info().Label, mdcamera.LabelSeparator+filepath.Base(info.Path))
		})
		if len(ds) == 0 {
			return nil, fmt.Errorf("camera: %s is not registered with mediadevices (plugged in after start?): %w", info.Path, hw.ErrNoDevice)
		}
		return openDriver(ds[0], mode, clk)
	}
	return openV4L2(info.Path, mode, clk)
}

func names(infos []Info) string {
	var s []string
	for _, in := range infos {
		n := in.Path
		if in.ByID != "" {
			n += " (" + in.ByID + ")"
		} else if in.ByPath != "" {
			n += " (" + in.ByPath + ")"
		}
		s = append(s, n)
	}
	return strings.Join(s, ", ")
}

// v4l2Camera streams compressed frames (MJPEG, H264) as the camera
// encoded them.
type v4l2Camera struct {
	cam  *webcam.Webcam
	path string
	mode Mode
	clk  clock.Clock

	readMu sync.Mutex
	closed atomic.Bool
	once   sync.Once
	seq    uint64
	norm   []byte
}

func openV4L2(path string, m Mode, clk clock.Clock) (*v4l2Camera, error) {
	cam, err := webcam.Open(path)
	if err != nil {
		return nil, fmt.Errorf("camera: open %s: %w", path, err)
	}
	pf, w, h, err := cam.SetImageFormat(toFourcc(m.Format), uint32(m.Width), uint32(m.Height))
	if err != nil {
		cam.Close()
		return nil, fmt.Errorf("camera: %s: set format %v: %w", path, m, err)
	}
	if fourcc(pf) != m.Format || int(w) != m.Width || int(h) != m.Height {
		cam.Close()
		return nil, fmt.Errorf("camera: %s: asked for %v, driver set %dx%d %s", path, m, w, h, fourcc(pf))
	}
	if m.FPS > 0 {
		if err := cam.SetFramerate(float32(m.FPS)); err != nil {
			cam.Close()
			return nil, fmt.Errorf("camera: %s: set %g fps: %w", path, m.FPS, err)
		}
	}
	if err := cam.SetBufferCount(3); err != nil {
		cam.Close()
		return nil, fmt.Errorf("camera: %s: buffers: %w", path, err)
	}
	if err := cam.StartStreaming(); err != nil {
		cam.Close()
		return nil, fmt.Errorf("camera: %s: start streaming: %w", path, err)
	}
	return &v4l2Camera{cam: cam, path: path, mode: m, clk: clk}, nil
}

func (c *v4l2Camera) Mode() Mode { return c.mode }

// readTimeout is how long Read waits for a frame before reporting the
// camera stalled (it polls in 1 s steps to notice Close).
const readTimeout = 5

func (c *v4l2Camera) Read(f *Frame) error {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for waited := 0; ; {
		if c.closed.Load() {
			return hw.ErrClosed
		}
		err := c.cam.WaitForFrame(1)
		var to *webcam.Timeout
		if errors.As(err, &to) {
			if waited++; waited >= readTimeout {
				return fmt.Errorf("camera: %s: no frame for %d s", c.path, readTimeout)
			}
			continue
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "no such device") {
				return fmt.Errorf("camera: %s: %w: %v", c.path, hw.ErrDeviceLost, err)
			}
			return fmt.Errorf("camera: %s: wait: %w", c.path, err)
		}
		b, idx, err := c.cam.GetFrame()
		if err != nil {
			return fmt.Errorf("camera: %s: dequeue: %w", c.path, err)
		}
		ts := c.clk.Mono()
		if len(b) == 0 {
			c.cam.ReleaseFrame(idx)
			continue
		}
		if c.mode.Format == FormatMJPEG {
			var nb []byte
			nb, err = jpeg.Normalize(c.norm, b)
			if err == nil {
				f.Data = append(f.Data[:0], nb...)
				if len(nb) > 0 && &nb[0] != &b[0] {
					c.norm = nb
				}
			}
		} else {
			f.Data = append(f.Data[:0], b...)
		}
		c.cam.ReleaseFrame(idx)
		if err != nil {
			return fmt.Errorf("camera: %s: bad MJPEG frame: %w", c.path, err)
		}
		f.Seq, f.TS, f.Format = c.seq, ts, c.mode.Format
		c.seq++
		return nil
	}
}

// forceKeyFrameCID is V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME.
const forceKeyFrameCID = 0x009909e5

// RequestKeyframe asks a camera-native H264 stream for an IDR frame, where
// the driver exposes V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME.
func (c *v4l2Camera) RequestKeyframe() error {
	if c.mode.Format != FormatH264 {
		return fmt.Errorf("camera: %s streams %s, not H264", c.path, c.mode.Format)
	}
	if err := c.cam.SetControl(forceKeyFrameCID, 1); err != nil {
		return fmt.Errorf("camera: %s cannot force a key frame: %w", c.path, err)
	}
	return nil
}

func (c *v4l2Camera) Close() error {
	var err error
	c.once.Do(func() {
		c.closed.Store(true)
		c.readMu.Lock() // a Read notices within its 1 s poll
		defer c.readMu.Unlock()
		err = c.cam.Close()
	})
	return err
}
