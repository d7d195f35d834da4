//go:build !portaudio || !cgo

package portaudio

import (
	"fmt"

	"github.com/robot-agent/robot-agent/hw"
)

// BuiltIn reports whether this binary was built with PortAudio support.
const BuiltIn = false

func newBackend() (backend, error) {
	return nil, fmt.Errorf("portaudio: real audio devices: %w (rebuild with cgo and -tags portaudio after installing portaudio19-dev, e.g. `make build`; or run with --sim)", hw.ErrNotBuiltIn)
}

// Version is the PortAudio library's version text.
func Version() string { return "not built in" }
