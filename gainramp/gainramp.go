// Package gainramp scales 16-bit PCM by a gain that moves towards its
// target by a linear ramp, one frame at a time (the samples of a frame
// share the gain). The speaker decorators that change the robot's level
// (duck, clipguard, volume) use it, so that no change of level is a step
// in the output.
package gainramp

// Ramp is the gain reached and the largest change of it per frame. Set
// Gain (usually 1), Down and Up (> 0) before use. One goroutine.
type Ramp struct {
	Gain     float32 // the gain of the last frame Apply wrote
	Down, Up float32 // the largest change per frame, down and up
	buf      []int16 // Scale's output
}

// Scale returns p scaled as Apply does: p itself while the gain and the
// target are both 1 (unchanged, no copy), otherwise a buffer of the Ramp's
// valid until the next call. It allocates only to grow that buffer to the
// largest p.
func (r *Ramp) Scale(p []int16, channels int, target float32) []int16 {
	if r.Gain == 1 && target == 1 {
		return p
	}
	if cap(r.buf) < len(p) {
		r.buf = make([]int16, len(p))
	}
	out := r.buf[:len(p)]
	r.Apply(out, p, channels, target)
	return out
}

// Apply writes in scaled into out (at least as long; it may be in), the
// gain moving towards target by at most Down or Up per frame of channels
// samples. Values are rounded half away from zero and saturate at the
// int16 range. It does not allocate.
func (r *Ramp) Apply(out, in []int16, channels int, target float32) {
	channels = max(channels, 1)
	g := r.Gain
	for i := 0; i < len(in); i += channels {
		switch {
		case g > target:
			g = max(g-r.Down, target)
		case g < target:
			g = min(g+r.Up, target)
		}
		for c := 0; c < channels && i+c < len(in); c++ {
			v := float32(in[i+c]) * g
			if v < 0 {
				v -= 0.5
			} else {
				v += 0.5
			}
			out[i+c] = int16(max(-32768, min(32767, v)))
		}
	}
	r.Gain = g
}
