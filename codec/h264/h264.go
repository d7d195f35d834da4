// Package h264 encodes I420 pictures into H264 Annex-B access units with
// low-latency settings (no B-frames, no lookahead, one access unit out per
// picture in), and inspects Annex-B access units (NAL unit types, key
// frames, parameter sets).
//
// The encoder is chosen at build time: with -tags x264 (and cgo, and
// libx264-dev installed) New returns a libx264 encoder; otherwise New
// returns an error wrapping hw.ErrNotBuiltIn. Backend names the encoder
// this binary carries. openh264 (mediadevices' bundled static library) and
// libx264 cannot be linked into one binary; this package binds libx264.
//
// Every key frame the encoder produces is an IDR access unit that carries
// SPS and PPS, so a receiver can join mid-stream at any key frame.
//
// # Concurrency
//
// An Encoder is used by one goroutine at a time (the video pipeline). The
// Annex-B functions are pure.
package h264

import (
	"errors"
	"fmt"
	"image"
	"time"
)

// Profile is an H264 profile.
type Profile string

// Profiles the encoder accepts.
const (
	ProfileBaseline Profile = "baseline" // no CABAC, no B-frames: cheapest to decode
	ProfileMain     Profile = "main"
	ProfileHigh     Profile = "high" // 8x8 transform: best quality per bit
)

// Presets are libx264 speed presets, fastest first.
var Presets = []string{"ultrafast", "superfast", "veryfast", "faster", "fast", "medium"}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("h264: invalid configuration")

// Config configures an encoder.
type Config struct {
	Width, Height int     // picture size in pixels; even
	FPS           float64 // nominal frame rate (rate control uses timestamps)
	BitrateKbps   int     // target average bitrate
	// GOP is the number of frames from one key frame to the next
	// (maximum; key frames also come on request). 0: 2 s worth of frames.
	GOP     int
	Profile Profile // default baseline
	Preset  string  // libx264 preset; default ultrafast
	// VBVMillis bounds the size of any one frame to this much of the
	// bitrate (the VBV buffer), so one key frame cannot hog a slow link.
	// 0: 500 ms.
	VBVMillis int
	// Threads for the encoder; 0 lets libx264 decide (sliced threads).
	Threads int
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Profile == "" {
		c.Profile = ProfileBaseline
	}
	if c.Preset == "" {
		c.Preset = "ultrafast"
	}
	if c.GOP == 0 && c.FPS > 0 {
		c.GOP = int(2*c.FPS + 0.5)
	}
	if c.VBVMillis == 0 {
		c.VBVMillis = 500
	}
	return c
}

// Validate checks c (after WithDefaults); errors name the field and value.
func (c Config) Validate() error {
	switch {
	case c.Width < 16 || c.Width > 4096 || c.Width%2 != 0:
		return fmt.Errorf("%w: width %d, want an even number in 16..4096", ErrConfig, c.Width)
	case c.Height < 16 || c.Height > 4096 || c.Height%2 != 0:
		return fmt.Errorf("%w: height %d, want an even number in 16..4096", ErrConfig, c.Height)
	case !(c.FPS >= 1 && c.FPS <= 120):
		return fmt.Errorf("%w: fps %v, want 1..120", ErrConfig, c.FPS)
	case c.BitrateKbps < 16 || c.BitrateKbps > 100000:
		return fmt.Errorf("%w: bitrate_kbps %d, want 16..100000", ErrConfig, c.BitrateKbps)
	case c.GOP < 1 || c.GOP > 10000:
		return fmt.Errorf("%w: gop %d, want 1..10000 frames", ErrConfig, c.GOP)
	case c.VBVMillis < 50 || c.VBVMillis > 10000:
		return fmt.Errorf("%w: vbv_ms %d, want 50..10000", ErrConfig, c.VBVMillis)
	case c.Threads < 0 || c.Threads > 64:
		return fmt.Errorf("%w: threads %d, want 0..64", ErrConfig, c.Threads)
	}
	switch c.Profile {
	case ProfileBaseline, ProfileMain, ProfileHigh:
	default:
		return fmt.Errorf("%w: profile %q, want baseline, main or high", ErrConfig, c.Profile)
	}
	for _, p := range Presets {
		if p == c.Preset {
			return nil
		}
	}
	return fmt.Errorf("%w: preset %q, want one of %v", ErrConfig, c.Preset, Presets)
}

// AccessUnit is one encoded picture in Annex-B byte-stream format.
type AccessUnit struct {
	// Data is owned by the encoder and valid until its next Encode call.
	Data []byte
	// Key reports an IDR picture; its access unit starts with SPS and PPS.
	Key bool
}

// Encoder encodes pictures one at a time.
type Encoder interface {
	// Encode encodes pic (4:2:0 YCbCr of the configured size) captured at
	// ts on the agent's monotonic clock. forceKey makes this picture an
	// IDR. Every call returns exactly one access unit.
	Encode(pic *image.YCbCr, ts time.Duration, forceKey bool) (AccessUnit, error)
	// Close releases the encoder. Encode must not be called afterwards.
	Close() error
}

func checkPicture(pic *image.YCbCr, w, h int) error {
	if pic == nil {
		return errors.New("h264: nil picture")
	}
	if pic.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		return fmt.Errorf("h264: picture subsampling %v, want 4:2:0", pic.SubsampleRatio)
	}
	if pic.Rect.Dx() != w || pic.Rect.Dy() != h {
		return fmt.Errorf("h264: picture is %dx%d, encoder configured for %dx%d", pic.Rect.Dx(), pic.Rect.Dy(), w, h)
	}
	if pic.YStride < w || pic.CStride < w/2 || len(pic.Y) < pic.YStride*(h-1)+w || len(pic.Cb) < pic.CStride*(h/2-1)+w/2 || len(pic.Cr) < pic.CStride*(h/2-1)+w/2 {
		return fmt.Errorf("h264: picture planes too small for %dx%d", w, h)
	}
	return nil
}
