package camera

import (
	"bytes"
	"errors"
	"image"
	stdjpeg "image/jpeg"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

func TestNegotiate(t *testing.T) {
	c920 := []Mode{
		{640, 480, 30, FormatYUYV}, {640, 480, 15, FormatYUYV}, {1280, 720, 10, FormatYUYV},
		{640, 480, 30, FormatMJPEG}, {1280, 720, 30, FormatMJPEG}, {1920, 1080, 30, FormatMJPEG},
		{640, 480, 30, FormatH264}, {1920, 1080, 30, FormatH264},
	}
	raw := []PixelFormat{FormatI420, FormatNV12, FormatYUYV, FormatMJPEG}
	tests := []struct {
		name string
		want Want
		got  Mode
		ok   bool
	}{
		{"exact raw", Want{640, 480, 15, raw}, Mode{640, 480, 15, FormatYUYV}, true},
		{"fps above wanted, lowest such", Want{640, 480, 20, raw}, Mode{640, 480, 30, FormatYUYV}, true},
		{"raw too slow: MJPEG at size", Want{1280, 720, 30, raw}, Mode{1280, 720, 30, FormatMJPEG}, true},
		{"h264 preferred", Want{1920, 1080, 30, []PixelFormat{FormatH264, FormatMJPEG}}, Mode{1920, 1080, 30, FormatH264}, true},
		{"nearest size", Want{800, 600, 30, raw}, Mode{640, 480, 30, FormatYUYV}, true},
		{"any format", Want{1920, 1080, 30, nil}, Mode{1920, 1080, 30, FormatMJPEG}, true},
		{"no format", Want{640, 480, 30, []PixelFormat{FormatNV21}}, Mode{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Negotiate(c920, tt.want)
			if got != tt.got || ok != tt.ok {
				t.Fatalf("Negotiate = %v, %v; want %v, %v", got, ok, tt.got, tt.ok)
			}
		})
	}
	// Unknown frame rates lose to known sufficient ones, win over too slow.
	m := []Mode{{640, 480, 5, FormatYUYV}, {640, 480, 0, FormatMJPEG}}
	if got, _ := Negotiate(m, Want{640, 480, 15, raw}); got.Format != FormatMJPEG {
		t.Fatalf("picked %v over an unknown rate", got)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]PixelFormat{"mjpeg": FormatMJPEG, "MJPG": FormatMJPEG, "yu12": FormatI420, "h264": FormatH264, "yuy2": FormatYUYV} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("rgb24"); err == nil {
		t.Error("rgb24 accepted")
	}
}

func TestInfoMatches(t *testing.T) {
	in := Info{Path: "/dev/video2", ByID: "usb-Cam_123-video-index0", ByPath: "pci-0000:00:14.0-usb-0:1:1.0-video-index0", Name: "HD Cam", Bus: "usb-0000:00:14.0-1"}
	for _, id := range []string{"/dev/video2", "video2", in.ByID, "/dev/v4l/by-id/" + in.ByID, in.ByPath, "/dev/v4l/by-path/" + in.ByPath, "HD Cam", in.Bus} {
		if !in.Matches(id) {
			t.Errorf("%q does not match", id)
		}
	}
	for _, id := range []string{"", "video", "/dev/video20", "HD"} {
		if in.Matches(id) {
			t.Errorf("%q matches", id)
		}
	}
}

func TestToI420(t *testing.T) {
	for _, r := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio440} {
		src := image.NewYCbCr(image.Rect(0, 0, 8, 4), r)
		for i := range src.Y {
			src.Y[i] = uint8(i)
		}
		for y := 0; y < 4; y++ {
			for x := 0; x < 8; x++ {
				o := src.COffset(x, y)
				src.Cb[o], src.Cr[o] = uint8(10*x), uint8(10*y) // chroma a function of position
			}
		}
		dst, err := ToI420(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst.Y, src.Y) {
			t.Fatalf("%v: luma changed", r)
		}
		for y := 0; y < 2; y++ {
			for x := 0; x < 4; x++ {
				cb, cr := dst.Cb[y*dst.CStride+x], dst.Cr[y*dst.CStride+x]
				// Average of the covered source chroma samples, within rounding.
				wantCb, wantCr := src.YCbCrAt(2*x, 2*y).Cb, src.YCbCrAt(2*x, 2*y).Cr
				if d := int(cb) - int(wantCb); d < 0 || d > 5 {
					t.Fatalf("%v: Cb(%d,%d) = %d, want about %d", r, x, y, cb, wantCb)
				}
				if d := int(cr) - int(wantCr); d < 0 || d > 5 {
					t.Fatalf("%v: Cr(%d,%d) = %d, want about %d", r, x, y, cr, wantCr)
				}
			}
		}
	}
	gray := image.NewGray(image.Rect(0, 0, 4, 4))
	gray.Pix[5] = 200
	dst, _ := ToI420(nil, gray)
	if dst.Y[5] != 200 || dst.Cb[0] != 128 {
		t.Fatalf("gray converted to Y=%d Cb=%d", dst.Y[5], dst.Cb[0])
	}
	if _, err := ToI420(nil, image.NewGray(image.Rect(0, 0, 1, 1))); err == nil {
		t.Fatal("converted a 1x1 picture")
	}
}

func TestToI420DoesNotAllocate(t *testing.T) {
	src := image.NewYCbCr(image.Rect(0, 0, 64, 48), image.YCbCrSubsampleRatio422)
	dst := EnsureI420(nil, 64, 48)
	if n := testing.AllocsPerRun(10, func() { dst, _ = ToI420(dst, src) }); n != 0 {
		t.Fatalf("ToI420 allocates %v times per frame", n)
	}
}

func TestScale(t *testing.T) {
	src := EnsureI420(nil, 64, 48)
	DrawTestPattern(src, 3)
	for i := range src.Cb {
		src.Cb[i] = 100
	}
	dst := EnsureI420(nil, 32, 24)
	Scale(dst, src)
	// Box filter: each output pixel is the mean of a 2x2 block.
	for y := 0; y < 24; y++ {
		for x := 0; x < 32; x++ {
			sum := int(src.Y[2*y*64+2*x]) + int(src.Y[2*y*64+2*x+1]) + int(src.Y[(2*y+1)*64+2*x]) + int(src.Y[(2*y+1)*64+2*x+1])
			if got := int(dst.Y[y*32+x]); got != (sum+2)/4 {
				t.Fatalf("Y(%d,%d) = %d, want %d", x, y, got, (sum+2)/4)
			}
		}
	}
	if dst.Cb[5] != 100 {
		t.Fatalf("Cb = %d, want 100", dst.Cb[5])
	}
	same := EnsureI420(nil, 64, 48)
	Scale(same, src)
	if !bytes.Equal(same.Y, src.Y) {
		t.Fatal("same-size Scale is not a copy")
	}
}

func TestBarCode(t *testing.T) {
	img := EnsureI420(nil, 320, 240)
	for _, n := range []int{0, 1, 255, 4660, 65535, 65536 + 7} {
		DrawTestPattern(img, n)
		got, ok := ReadBarCode(img.Y, img.YStride)
		if !ok || int(got) != n%65536 {
			t.Fatalf("frame %d: bar code %d, %v", n, got, ok)
		}
	}
	for i := range img.Y {
		img.Y[i] = 128
	}
	if _, ok := ReadBarCode(img.Y, img.YStride); ok {
		t.Fatal("grey picture read as a bar code")
	}
}

// testCamera checks the Camera contract on a fresh camera from open.
func testCamera(t *testing.T, open func(t *testing.T) Camera) {
	t.Run("frames", func(t *testing.T) {
		c := open(t)
		defer c.Close()
		m := c.Mode()
		if m.Width <= 0 || m.Height <= 0 || m.Format == "" {
			t.Fatalf("Mode() = %v", m)
		}
		var f Frame
		var lastSeq uint64
		var lastTS time.Duration
		for i := 0; i < 8; i++ {
			if err := c.Read(&f); err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if i > 0 && (f.Seq <= lastSeq || f.TS <= lastTS) {
				t.Fatalf("frame %d: seq %d ts %v after seq %d ts %v; want both increasing", i, f.Seq, f.TS, lastSeq, lastTS)
			}
			lastSeq, lastTS = f.Seq, f.TS
			switch {
			case m.Format.Raw():
				if f.Format != FormatI420 || f.Image == nil || f.Image.Rect.Dx() != m.Width || f.Image.Rect.Dy() != m.Height {
					t.Fatalf("frame %d: %s %v, want I420 %dx%d", i, f.Format, f.Image.Bounds(), m.Width, m.Height)
				}
			case len(f.Data) == 0 || f.Format != m.Format:
				t.Fatalf("frame %d: %s with %d bytes, want %s data", i, f.Format, len(f.Data), m.Format)
			}
		}
	})
	t.Run("close unblocks read", func(t *testing.T) {
		c := open(t)
		var f Frame
		if err := c.Read(&f); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			var err error
			for err == nil {
				err = c.Read(&f)
			}
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond)
		closed := time.Now()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, hw.ErrClosed) {
				t.Fatalf("Read after Close: %v, want hw.ErrClosed", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Read still blocked 2 s after Close")
		}
		if d := time.Since(closed); d > 1500*time.Millisecond {
			t.Fatalf("Close took %v to unblock Read", d)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := c.Read(&f); !errors.Is(err, hw.ErrClosed) {
			t.Fatalf("Read after Close: %v", err)
		}
	})
}

func TestSimConformance(t *testing.T) {
	for _, f := range []PixelFormat{FormatI420, FormatMJPEG} {
		t.Run(string(f), func(t *testing.T) {
			testCamera(t, func(t *testing.T) Camera {
				c, err := NewSim(SimConfig{Width: 320, Height: 240, FPS: 30, Format: f}, clock.NewReal())
				if err != nil {
					t.Fatal(err)
				}
				return c
			})
		})
	}
}

func TestVideoTestConformance(t *testing.T) {
	testCamera(t, func(t *testing.T) Camera {
		c, err := OpenVideoTest(320, 240, 30, clock.NewReal())
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

// TestVideoTestPacing: mediadevices' video test driver delivers the asked
// size at about the asked rate, and frames carry the clock's time.
func TestVideoTestPacing(t *testing.T) {
	clk := clock.NewReal()
	c, err := OpenVideoTest(160, 120, 20, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var f Frame
	if err := c.Read(&f); err != nil {
		t.Fatal(err)
	}
	first := f.TS
	for i := 0; i < 10; i++ {
		if err := c.Read(&f); err != nil {
			t.Fatal(err)
		}
	}
	if now := clk.Mono(); f.TS > now || now-f.TS > 100*time.Millisecond {
		t.Fatalf("frame TS %v, clock now %v", f.TS, now)
	}
	// 10 periods of 50 ms; generous bounds for a loaded machine.
	if d := f.TS - first; d < 400*time.Millisecond || d > 1500*time.Millisecond {
		t.Fatalf("10 frames at 20 fps took %v", d)
	}
	if f.Image.Rect.Dx() != 160 || f.Image.Rect.Dy() != 120 {
		t.Fatalf("frame is %v", f.Image.Rect)
	}
}

// TestSimFakeClock: on a fake clock the sim camera stamps frame n at
// open + n/fps exactly, and a late reader skips to the newest frame.
func TestSimFakeClock(t *testing.T) {
	clk := clock.NewFake()
	clk.SetAutoAdvance(true)
	c, err := NewSim(SimConfig{Width: 320, Height: 240, FPS: 10}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var f Frame
	t0 := clk.Mono()
	for i := 0; i < 5; i++ {
		if err := c.Read(&f); err != nil {
			t.Fatal(err)
		}
		if f.Seq != uint64(i) || f.TS != t0+time.Duration(i)*100*time.Millisecond {
			t.Fatalf("frame %d: seq %d ts %v", i, f.Seq, f.TS-t0)
		}
		if n, ok := ReadBarCode(f.Image.Y, f.Image.YStride); !ok || int(n) != i {
			t.Fatalf("frame %d shows bar code %d (%v)", i, n, ok)
		}
	}
	clk.Advance(time.Second) // the reader falls 10 frames behind
	if err := c.Read(&f); err != nil {
		t.Fatal(err)
	}
	if f.Seq < 13 || f.TS < clk.Mono()-100*time.Millisecond {
		t.Fatalf("late read returned seq %d ts %v at %v; want the newest frame", f.Seq, f.TS-t0, clk.Mono()-t0)
	}
}

func TestSimMJPEGWithoutHuffmanTables(t *testing.T) {
	c, err := NewSim(SimConfig{Width: 320, Height: 240, FPS: 30, Format: FormatMJPEG, StripDHT: true}, clock.NewReal())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var f Frame
	if err := c.Read(&f); err != nil {
		t.Fatal(err)
	}
	if _, err := stdjpeg.Decode(bytes.NewReader(f.Data)); err == nil {
		t.Fatal("frame without Huffman tables decoded; StripDHT did nothing")
	}
}

func TestSimConfigErrors(t *testing.T) {
	for _, cfg := range []SimConfig{{Width: 15, Height: 240}, {Width: 320, Height: 240, FPS: -1}, {Format: FormatYUYV}} {
		if _, err := NewSim(cfg, clock.NewReal()); err == nil {
			t.Errorf("NewSim(%+v) accepted", cfg)
		}
	}
}
