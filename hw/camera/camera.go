// Package camera is the camera seam of robot-agent: the Camera interface,
// mode negotiation, and its implementations.
//
//   - Sim is a synthetic camera driven by an injected clock.Clock: a moving
//     test pattern with the frame number drawn as a bar code, delivered as
//     raw I420, MJPEG or (simulating a camera with an on-board encoder)
//     H264. Pure Go.
//   - OpenVideoTest opens github.com/pion/mediadevices' synthetic video test
//     driver (colour bars and noise, paced by the wall clock) through the
//     same adapter that serves real cameras. Pure Go.
//   - Open and List use real V4L2 cameras: raw formats (YUYV, NV12, I420...)
//     through mediadevices' V4L2 camera driver, camera-native MJPEG and
//     H264 through github.com/blackjack/webcam (the V4L2 binding under that
//     driver) so the compressed bytes are passed through untouched. They
//     need cgo on Linux: mediadevices' camera driver compiles to nothing
//     without cgo, and then Open and List return an error wrapping
//     hw.ErrNotBuiltIn that says "camera support not built in" rather than
//     streaming nothing.
//
// Only mediadevices' camera and video test drivers are imported: its
// microphone driver enumerates audio devices (and can panic) at import,
// and audio belongs to PortAudio.
//
// # Identity
//
// A camera is selected by a stable identity: its /dev/v4l/by-id name (USB
// serial), its /dev/v4l/by-path name (port), its card name, its bus info,
// or /dev/videoN (which can change across boots). See Info.Matches.
//
// # Concurrency
//
// Read is called from one goroutine (the video pipeline); Close may be
// called from any goroutine and makes a blocked Read return hw.ErrClosed
// (after at most one frame period for devices that cannot be interrupted).
// List and Open are safe for concurrent use.
package camera

import (
	"fmt"
	"image"
	"strings"
	"time"
)

// PixelFormat is a frame format as V4L2 names it (a fourcc, upper case).
type PixelFormat string

// Pixel formats the agent knows. Raw ones are converted to I420.
const (
	FormatI420  PixelFormat = "I420" // planar 4:2:0 (V4L2 YU12)
	FormatNV12  PixelFormat = "NV12"
	FormatNV21  PixelFormat = "NV21"
	FormatYUYV  PixelFormat = "YUYV"
	FormatUYVY  PixelFormat = "UYVY"
	FormatMJPEG PixelFormat = "MJPG"
	FormatH264  PixelFormat = "H264"
)

// Raw reports whether frames in f are uncompressed pictures.
func (f PixelFormat) Raw() bool {
	switch f {
	case FormatI420, FormatNV12, FormatNV21, FormatYUYV, FormatUYVY:
		return true
	}
	return false
}

// ParseFormat maps a configuration string (case-insensitive; "mjpeg" and
// "yu12" accepted) to a PixelFormat.
func ParseFormat(s string) (PixelFormat, error) {
	switch strings.ToUpper(s) {
	case "I420", "YU12":
		return FormatI420, nil
	case "NV12":
		return FormatNV12, nil
	case "NV21":
		return FormatNV21, nil
	case "YUYV", "YUY2":
		return FormatYUYV, nil
	case "UYVY":
		return FormatUYVY, nil
	case "MJPG", "MJPEG":
		return FormatMJPEG, nil
	case "H264":
		return FormatH264, nil
	}
	return "", fmt.Errorf("camera: pixel format %q is not one of i420, nv12, nv21, yuyv, uyvy, mjpeg, h264", s)
}

// Mode is one way a camera can stream.
type Mode struct {
	Width, Height int
	FPS           float64 // 0: not reported by the device
	Format        PixelFormat
}

func (m Mode) String() string {
	if m.FPS == 0 {
		return fmt.Sprintf("%dx%d %s", m.Width, m.Height, m.Format)
	}
	return fmt.Sprintf("%dx%d@%g %s", m.Width, m.Height, m.FPS, m.Format)
}

// Info describes a camera found by List.
type Info struct {
	Path   string // /dev/videoN
	ByID   string // name under /dev/v4l/by-id, if any (stable: USB serial)
	ByPath string // name under /dev/v4l/by-path, if any (stable: port)
	Name   string // card name, e.g. "HD Pro Webcam C920"
	Bus    string // bus info, e.g. "usb-0000:00:14.0-1"
	Modes  []Mode
}

// Matches reports whether id selects this camera: equal to its by-id or
// by-path name (with or without the /dev/v4l/... directory), its path, its
// videoN name, its bus info or its card name.
func (i Info) Matches(id string) bool {
	if id == "" {
		return false
	}
	for _, s := range []string{i.Path, i.ByID, i.ByPath, i.Name, i.Bus,
		strings.TrimPrefix(i.Path, "/dev/")} {
		if s != "" && s == id {
			return true
		}
	}
	return (i.ByID != "" && id == "/dev/v4l/by-id/"+i.ByID) || (i.ByPath != "" && id == "/dev/v4l/by-path/"+i.ByPath)
}

// Frame is one captured frame. The caller owns it and passes it to Read
// again: Read reuses Image's planes and Data's array when they are large
// enough, so a steady stream does not allocate.
type Frame struct {
	Seq uint64 // frames read since Open, from 0
	// TS is the capture time on the agent's monotonic clock
	// (clock.Clock.Mono), the clock mic audio and state events use. For
	// V4L2 devices it is taken when the frame is dequeued.
	TS     time.Duration
	Format PixelFormat // FormatI420 (Image is set), FormatMJPEG or FormatH264 (Data is set)
	Image  *image.YCbCr
	Data   []byte
}

// Camera is an open camera streaming in one mode.
type Camera interface {
	// Mode returns the mode negotiated at open.
	Mode() Mode
	// Read blocks until the next frame and stores it in f.
	Read(f *Frame) error
	// Close stops streaming; a blocked or later Read returns hw.ErrClosed.
	// It is idempotent.
	Close() error
}

// KeyframeRequester is implemented by cameras with an on-board H264
// encoder that can be asked for an IDR frame.
type KeyframeRequester interface {
	RequestKeyframe() error
}

// Want is what the agent asks of a camera.
type Want struct {
	Width, Height int
	FPS           float64
	// Formats in order of preference; empty means any.
	Formats []PixelFormat
}

// Negotiate picks the mode of modes closest to w: the nearest size first
// (by pixel count, then aspect), then a frame rate at least w.FPS, then the
// format earliest in w.Formats, then the lowest frame rate above w.FPS. It
// returns false when no mode has an acceptable format.
func Negotiate(modes []Mode, w Want) (Mode, bool) {
	best, found := Mode{}, false
	var bestScore [4]float64
	for _, m := range modes {
		rank := 0
		if len(w.Formats) > 0 {
			rank = -1
			for i, f := range w.Formats {
				if f == m.Format {
					rank = i
					break
				}
			}
			if rank < 0 {
				continue
			}
		}
		size := abs(float64(m.Width*m.Height - w.Width*w.Height))
		if size == 0 {
			size = abs(float64(m.Width - w.Width)) // same area, other aspect
		}
		short, excess := 0.0, 0.0
		switch {
		case m.FPS == 0:
			short = 0.5 // unknown: worse than enough, better than too few
		case m.FPS < w.FPS-0.01:
			short = 1 + w.FPS - m.FPS
		default:
			excess = m.FPS - w.FPS
		}
		score := [4]float64{size, short, float64(rank), excess}
		if !found || less(score, bestScore) {
			best, bestScore, found = m, score, true
		}
	}
	return best, found
}

func less(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
