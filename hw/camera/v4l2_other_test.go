//go:build !(linux && cgo)

package camera

import (
	"errors"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// TestNotBuiltIn: without cgo, real cameras fail loudly instead of
// streaming nothing.
func TestNotBuiltIn(t *testing.T) {
	if _, err := List(); !errors.Is(err, hw.ErrNotBuiltIn) || !strings.Contains(err.Error(), "camera support not built in") {
		t.Fatalf("List: %v", err)
	}
	if _, err := Open("", Want{Width: 640, Height: 480, FPS: 15}, clock.NewReal()); !errors.Is(err, hw.ErrNotBuiltIn) {
		t.Fatalf("Open: %v", err)
	}
	if Supported {
		t.Fatal("Supported is true")
	}
}
