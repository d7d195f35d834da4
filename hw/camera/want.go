package camera

import (
	"fmt"

	"github.com/robot-agent/robot-agent/config/field"
)

// Limits of Want that Validate enforces.
const (
	MinSize = 16   // pixels, width and height
	MaxSize = 4096 // pixels, width and height
	MinFPS  = 1.0
	MaxFPS  = 120.0
)

// Validate returns every problem of the size and rate w asks for, each a
// *field.Error named by its configuration key (width, height, fps); the
// caller places them under its section with field.Under. Sizes must be
// even (4:2:0 chroma).
func (w Want) Validate() error {
	var errs field.List
	size := fmt.Sprintf("want an even number in %d..%d", MinSize, MaxSize)
	if w.Width < MinSize || w.Width > MaxSize || w.Width%2 != 0 {
		errs.Add("width", w.Width, size, "")
	}
	if w.Height < MinSize || w.Height > MaxSize || w.Height%2 != 0 {
		errs.Add("height", w.Height, size, "")
	}
	if !(w.FPS >= MinFPS && w.FPS <= MaxFPS) {
		errs.Add("fps", w.FPS, fmt.Sprintf("want %g..%g", MinFPS, MaxFPS), "")
	}
	return errs.Err()
}
