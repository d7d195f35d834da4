//go:build !(x264 && cgo)

package h264

import (
	"fmt"

	"github.com/robot-agent/robot-agent/device"
)

// Backend names the H264 encoder built into this binary ("" for none).
const Backend = ""

// New reports that no encoder is built in. Build with cgo, -tags x264 and
// libx264-dev installed (scripts/detect-tags.sh adds the tag when
// pkg-config finds x264).
func New(cfg Config) (Encoder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("h264: no H264 encoder in this binary: %w (build with cgo and -tags x264, libx264-dev installed)", device.ErrNotBuiltIn)
}
