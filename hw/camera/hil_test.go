//go:build hil && linux && cgo

package camera

import (
	"os"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
)

// Hardware-in-the-loop test against a real USB camera (make hil):
//
//	ROBOT_AGENT_HIL_CAMERA=<by-id name, bus, card name or /dev/videoN>
//	ROBOT_AGENT_HIL_CAMERA_FORMAT=yuyv|mjpeg|h264 (default: raw preferred)
//
// It lists the camera's modes, checks the Camera contract, captures 3 s
// at 640x480 15 fps and reports the frame rate achieved and, for raw
// frames in an x264 build, the encode cost per frame.

func hilOpen(t *testing.T) Camera {
	t.Helper()
	want := Want{Width: 640, Height: 480, FPS: 15, Formats: []PixelFormat{FormatI420, FormatNV12, FormatYUYV, FormatUYVY, FormatMJPEG}}
	if f := os.Getenv("ROBOT_AGENT_HIL_CAMERA_FORMAT"); f != "" {
		pf, err := ParseFormat(f)
		if err != nil {
			t.Fatal(err)
		}
		want.Formats = []PixelFormat{pf}
	}
	c, err := Open(os.Getenv("ROBOT_AGENT_HIL_CAMERA"), want, clock.NewReal())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHILCamera(t *testing.T) {
	infos, err := List()
	if err != nil || len(infos) == 0 {
		t.Fatalf("no camera: %v", err)
	}
	for _, in := range infos {
		t.Logf("%s %q bus %q by-id %q by-path %q", in.Path, in.Name, in.Bus, in.ByID, in.ByPath)
		for _, m := range in.Modes {
			t.Logf("    %v", m)
		}
	}
	testCamera(t, hilOpen)

	c := hilOpen(t)
	defer c.Close()
	m := c.Mode()
	t.Logf("streaming %v", m)
	var enc h264.Encoder
	if m.Format.Raw() && h264.Backend != "" {
		enc, err = h264.New(h264.Config{Width: m.Width, Height: m.Height, FPS: max(m.FPS, 1), BitrateKbps: 800})
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
	}
	var f Frame
	var first time.Duration
	var encCost time.Duration
	n, bytes := 0, 0
	for start := time.Now(); time.Since(start) < 3*time.Second; n++ {
		if err := c.Read(&f); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			first = f.TS
		}
		if enc != nil {
			t0 := time.Now()
			au, err := enc.Encode(f.Image, f.TS, false)
			if err != nil {
				t.Fatal(err)
			}
			encCost += time.Since(t0)
			bytes += len(au.Data)
		} else {
			bytes += len(f.Data)
		}
	}
	fps := float64(n-1) / (f.TS - first).Seconds()
	t.Logf("captured %d frames, %.1f fps achieved (mode says %g), %d B/s", n, fps, m.FPS, int(float64(bytes)/(f.TS-first).Seconds()))
	if enc != nil {
		t.Logf("x264 encode cost %.2f ms/frame at %dx%d", float64(encCost.Microseconds())/1000/float64(n), m.Width, m.Height)
	}
	if m.FPS > 0 && fps < m.FPS/2 {
		t.Errorf("achieved %.1f fps, under half the mode's %g", fps, m.FPS)
	}
}
