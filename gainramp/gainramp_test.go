package gainramp

import (
	"fmt"
	"testing"
)

func TestRampMovesLinearlyToTheTarget(t *testing.T) {
	r := Ramp{Gain: 1, Down: 0.25, Up: 0.5}
	in := []int16{1000, 1000, 1000, 1000, 1000, 1000}
	out := make([]int16, len(in))
	r.Apply(out, in, 1, 0)
	if want := []int16{750, 500, 250, 0, 0, 0}; fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("down: %v, want %v", out, want)
	}
	r.Apply(out, in, 1, 1)
	if want := []int16{500, 1000, 1000, 1000, 1000, 1000}; fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("up: %v, want %v", out, want)
	}
	if r.Gain != 1 {
		t.Errorf("gain %v, want 1", r.Gain)
	}
}

func TestFramesShareTheGainAndValuesRoundAndSaturate(t *testing.T) {
	r := Ramp{Gain: 1, Down: 0.5, Up: 0.5}
	in := []int16{3, -3, 3, -3, 32767, -32768}
	out := make([]int16, len(in))
	r.Apply(out, in, 2, 0.5) // one step: every frame at 0.5
	if want := []int16{2, -2, 2, -2, 16384, -16384}; fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("%v, want %v (half away from zero, both channels alike)", out, want)
	}
	r = Ramp{Gain: 2, Down: 0.1, Up: 0.1}
	r.Apply(out, in[4:], 1, 2)
	if out[0] != 32767 || out[1] != -32768 {
		t.Errorf("gain 2: %v, want saturation", out[:2])
	}
}

func TestApplyInPlaceDoesNotAllocate(t *testing.T) {
	r := Ramp{Gain: 1, Down: 0.01, Up: 0.01}
	p := make([]int16, 480)
	for i := range p {
		p[i] = int16(i)
	}
	target := float32(0.1)
	if n := testing.AllocsPerRun(100, func() {
		target = 1.1 - target
		r.Apply(p, p, 1, target)
	}); n != 0 {
		t.Errorf("%v allocations per Apply", n)
	}
}

func TestScalePassesUnityThroughAndReusesItsBuffer(t *testing.T) {
	r := Ramp{Gain: 1, Down: 1, Up: 1}
	p := []int16{100, -200, 300}
	if out := r.Scale(p, 1, 1); &out[0] != &p[0] {
		t.Error("unity: Scale copied the block")
	}
	out := r.Scale(p, 1, 0.5)
	if &out[0] == &p[0] || fmt.Sprint(out) != "[50 -100 150]" || fmt.Sprint(p) != "[100 -200 300]" {
		t.Errorf("0.5: %v (input %v), want a scaled copy and the input kept", out, p)
	}
	if n := testing.AllocsPerRun(100, func() { r.Scale(p, 1, 0.25) }); n != 0 {
		t.Errorf("%v allocations per Scale once grown", n)
	}
}
