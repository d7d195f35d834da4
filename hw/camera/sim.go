package camera

import (
	"errors"
	"fmt"
	"image"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/codec/jpeg"
	"github.com/robot-agent/robot-agent/hw"
)

// SimConfig configures a Sim camera.
type SimConfig struct {
	Width, Height int     // default 640x480
	FPS           float64 // default 15
	// Format is FormatI420 (default), FormatMJPEG (image/jpeg at quality
	// 80; with StripDHT the Huffman tables are left out as many UVC
	// cameras do) or FormatH264 (a camera with an on-board encoder; needs
	// an H264 encoder in the binary).
	Format   PixelFormat
	StripDHT bool
	// H264 configures the simulated on-board encoder (size and frame rate
	// are the camera's).
	H264 h264.Config
}

// Sim is a synthetic camera paced by an injected clock. Frame n shows a
// test pattern that moves with n and carries n as a bar code (see
// DrawTestPattern and ReadBarCode), and is "captured" at open + n/FPS on
// the clock. If the reader is late, Read returns at once with the frames
// it missed skipped, as a camera overwrites unread buffers; Seq counts
// every frame period, so skipped frames show as gaps.
type Sim struct {
	cfg    SimConfig
	mode   Mode
	clk    clock.Clock
	period time.Duration

	pace     *clock.Pacer
	mu       sync.Mutex // held while a frame is produced; Close waits for it
	t0       time.Duration
	started  bool
	n        uint64
	pic      *image.YCbCr
	jpg      jpeg.Encoder
	enc      h264.Encoder
	forceKey atomic.Bool
	frames   atomic.Uint64
}

// NewSim returns a synthetic camera.
func NewSim(cfg SimConfig, clk clock.Clock) (*Sim, error) {
	if cfg.Width == 0 && cfg.Height == 0 {
		cfg.Width, cfg.Height = 640, 480
	}
	if cfg.FPS == 0 {
		cfg.FPS = 15
	}
	if cfg.Format == "" {
		cfg.Format = FormatI420
	}
	switch {
	case cfg.Width < 16 || cfg.Height < 16 || cfg.Width > 4096 || cfg.Height > 4096 || cfg.Width%2 != 0 || cfg.Height%2 != 0:
		return nil, fmt.Errorf("camera: sim size %dx%d, want even sizes in 16..4096", cfg.Width, cfg.Height)
	case !(cfg.FPS > 0 && cfg.FPS <= 240):
		return nil, fmt.Errorf("camera: sim fps %v, want 0..240", cfg.FPS)
	case cfg.Format != FormatI420 && cfg.Format != FormatMJPEG && cfg.Format != FormatH264:
		return nil, fmt.Errorf("camera: sim format %q, want I420, MJPG or H264", cfg.Format)
	case clk == nil:
		return nil, errors.New("camera: sim needs a clock")
	}
	s := &Sim{
		cfg: cfg, clk: clk,
		mode:   Mode{Width: cfg.Width, Height: cfg.Height, FPS: cfg.FPS, Format: cfg.Format},
		period: time.Duration(float64(time.Second) / cfg.FPS),
		pace:   clock.NewPacer(clk),
		pic:    EnsureI420(nil, cfg.Width, cfg.Height),
	}
	if cfg.Format == FormatH264 {
		hc := cfg.H264
		hc.Width, hc.Height, hc.FPS = cfg.Width, cfg.Height, cfg.FPS
		if hc.BitrateKbps == 0 {
			hc.BitrateKbps = 1000
		}
		enc, err := h264.New(hc)
		if err != nil {
			return nil, fmt.Errorf("camera: sim H264 camera: %w", err)
		}
		s.enc = enc
	}
	return s, nil
}

// at returns the capture time of frame n after the first (no drift).
func (s *Sim) at(n uint64) time.Duration {
	return time.Duration(float64(n) * float64(time.Second) / s.cfg.FPS)
}

// Mode implements Camera.
func (s *Sim) Mode() Mode { return s.mode }

// Frames returns how many frames Read has returned.
func (s *Sim) Frames() uint64 { return s.frames.Load() }

// RequestKeyframe implements KeyframeRequester for the H264 format: the
// next frame is an IDR.
func (s *Sim) RequestKeyframe() error {
	if s.enc == nil {
		return fmt.Errorf("camera: sim %s camera has no encoder", s.cfg.Format)
	}
	s.forceKey.Store(true)
	return nil
}

// Read implements Camera.
func (s *Sim) Read(f *Frame) error {
	if s.pace.Closed() {
		return hw.ErrClosed
	}
	if !s.started {
		s.started = true
		s.t0 = s.clk.Mono()
	} else {
		s.n++
		// A late reader gets the newest frame, not a backlog.
		if late := s.clk.Mono() - (s.t0 + s.at(s.n)); late > s.period {
			s.n += uint64(late / s.period)
		}
	}
	ts := s.t0 + s.at(s.n)
	if err := s.pace.WaitUntil(ts); err != nil {
		return hw.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pace.Closed() {
		return hw.ErrClosed
	}
	DrawTestPattern(s.pic, int(s.n))
	f.Seq, f.TS, f.Format = s.n, ts, s.cfg.Format
	switch s.cfg.Format {
	case FormatI420:
		f.Image = EnsureI420(f.Image, s.cfg.Width, s.cfg.Height)
		ToI420(f.Image, s.pic)
		f.Data = f.Data[:0]
	case FormatMJPEG:
		b, err := s.jpg.Encode(s.pic)
		if err != nil {
			return err
		}
		if s.cfg.StripDHT {
			b = stripDHT(b)
		}
		f.Data = append(f.Data[:0], b...)
	case FormatH264:
		au, err := s.enc.Encode(s.pic, ts, s.forceKey.Swap(false))
		if err != nil {
			return err
		}
		f.Data = append(f.Data[:0], au.Data...)
	}
	s.frames.Add(1)
	return nil
}

// Close implements Camera. It waits for a frame being produced, then
// releases the simulated on-board encoder.
func (s *Sim) Close() error {
	s.pace.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enc != nil {
		s.enc.Close()
		s.enc = nil
	}
	return nil
}

// stripDHT drops DHT segments before the scan of a well-formed JPEG.
func stripDHT(b []byte) []byte {
	out := make([]byte, 0, len(b))
	out = append(out, b[:2]...)
	i := 2
	for i+4 <= len(b) && b[i] == 0xff {
		m := b[i+1]
		if m == 0xda {
			break
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if m != 0xc4 {
			out = append(out, b[i:i+2+n]...)
		}
		i += 2 + n
	}
	return append(out, b[i:]...)
}

// Test pattern bar code: 16 bits, each a barSize×barSize block of luma,
// black (0) or white (255), most significant bit first, in the top-left
// corner.
const barSize = 16

// DrawTestPattern paints frame n of the test pattern into img (4:2:0): a
// diagonal luma gradient moving 4 pixels per frame, a chroma gradient, and
// n as a bar code in the top-left corner (when img is at least 256x16).
func DrawTestPattern(img *image.YCbCr, n int) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	for y := 0; y < h; y++ {
		row := img.Y[y*img.YStride:]
		for x := 0; x < w; x++ {
			row[x] = uint8((x + y + 4*n) & 0xff)
		}
	}
	for y := 0; y < (h+1)/2; y++ {
		cb, cr := img.Cb[y*img.CStride:], img.Cr[y*img.CStride:]
		for x := 0; x < (w+1)/2; x++ {
			cb[x] = uint8(128 + (x-w/4)/4)
			cr[x] = uint8(128 + (y-h/4)/4)
		}
	}
	if w < 16*barSize || h < barSize {
		return
	}
	for bit := 0; bit < 16; bit++ {
		c := uint8(0)
		if uint16(n)&(1<<(15-bit)) != 0 {
			c = 255
		}
		for y := 0; y < barSize; y++ {
			row := img.Y[y*img.YStride+bit*barSize:]
			for x := 0; x < barSize; x++ {
				row[x] = c
			}
		}
	}
}

// ReadBarCode reads the frame number (mod 65536) from the luma plane of a
// (decoded) test pattern; ok is false when a block is neither clearly
// dark nor clearly light, as in a corrupted or foreign picture.
func ReadBarCode(y []byte, stride int) (n uint16, ok bool) {
	if stride < 16*barSize || len(y) < (barSize-1)*stride+16*barSize {
		return 0, false
	}
	for bit := 0; bit < 16; bit++ {
		sum := 0
		for yy := 4; yy < barSize-4; yy++ {
			for xx := 4; xx < barSize-4; xx++ {
				sum += int(y[yy*stride+bit*barSize+xx])
			}
		}
		switch avg := sum / ((barSize - 8) * (barSize - 8)); {
		case avg > 160:
			n |= 1 << (15 - bit)
		case avg < 96:
		default:
			return 0, false
		}
	}
	return n, true
}
