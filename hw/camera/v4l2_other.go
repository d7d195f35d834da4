//go:build !(linux && cgo)

package camera

import (
	"fmt"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// Supported reports whether real cameras can be used by this binary.
const Supported = false

// errNotBuiltIn explains why: mediadevices' V4L2 camera driver compiles to
// nothing without cgo, and a camera that streams nothing must not look
// like one that works.
var errNotBuiltIn = fmt.Errorf("camera: camera support not built in: this binary was built without cgo (CGO_ENABLED=0) or not for Linux, and mediadevices' V4L2 driver needs both; rebuild with cgo or use camera.device \"sim\" or \"videotest\": %w", hw.ErrNotBuiltIn)

// List reports that camera support is not built in.
func List() ([]Info, error) { return nil, errNotBuiltIn }

// Open reports that camera support is not built in.
func Open(device string, want Want, clk clock.Clock) (Camera, error) { return nil, errNotBuiltIn }
