//go:build !(opus && cgo)

package opus

import (
	"errors"
	"testing"

	"github.com/robot-agent/robot-agent/device"
)

func TestNotBuiltIn(t *testing.T) {
	if Available() || Backend != "" {
		t.Fatal("stub build claims Opus support")
	}
	if _, err := NewEncoder(EncoderConfig{}); !errors.Is(err, device.ErrNotBuiltIn) || !contains(err.Error(), "-tags opus") {
		t.Errorf("NewEncoder: %v, want device.ErrNotBuiltIn naming the tag", err)
	}
	if _, err := NewDecoder(24000); !errors.Is(err, device.ErrNotBuiltIn) {
		t.Errorf("NewDecoder: %v, want device.ErrNotBuiltIn", err)
	}
	if _, err := NewEncoder(EncoderConfig{FrameMS: 7}); !errors.Is(err, ErrConfig) {
		t.Errorf("NewEncoder with a bad config: %v, want ErrConfig first", err)
	}
}
