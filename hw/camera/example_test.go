package camera_test

import (
	"fmt"

	"github.com/robot-agent/robot-agent/hw/camera"
)

// A camera that offers YUYV only at low rates for large sizes: the agent
// asking for 1280x720 at 30 fps, raw preferred, gets MJPEG.
func ExampleNegotiate() {
	modes := []camera.Mode{
		{Width: 640, Height: 480, FPS: 30, Format: camera.FormatYUYV},
		{Width: 1280, Height: 720, FPS: 10, Format: camera.FormatYUYV},
		{Width: 1280, Height: 720, FPS: 30, Format: camera.FormatMJPEG},
	}
	m, ok := camera.Negotiate(modes, camera.Want{Width: 1280, Height: 720, FPS: 30,
		Formats: []camera.PixelFormat{camera.FormatYUYV, camera.FormatMJPEG}})
	fmt.Println(m, ok)
	// Output: 1280x720@30 MJPG true
}
