//go:build linux && cgo

package camera

import (
	"errors"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// TestListAndOpenUnknown runs against whatever cameras this machine has
// (often none): List works, and an unknown identity is refused by name.
func TestListAndOpenUnknown(t *testing.T) {
	infos, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Path == "" {
			t.Errorf("camera without a path: %+v", in)
		}
		t.Logf("%s %q bus %q by-id %q: %d modes", in.Path, in.Name, in.Bus, in.ByID, len(in.Modes))
	}
	_, err = Open("no-such-camera-xyz", Want{Width: 640, Height: 480, FPS: 15}, clock.NewReal())
	if !errors.Is(err, hw.ErrNoDevice) {
		t.Fatalf("Open(unknown) = %v, want hw.ErrNoDevice", err)
	}
	if !Supported {
		t.Fatal("Supported is false in a cgo Linux build")
	}
}
