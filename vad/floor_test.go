package vad

import (
	"math/rand/v2"
	"testing"
)

// steady returns n frame levels of a background at db, swinging ±2 dB.
func steady(rng *rand.Rand, n int, db float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = db + 4*rng.Float64() - 2
	}
	return out
}

// run feeds levels to f as an idle pump does and returns, per frame, the
// floor the frame was judged against.
func run(f *Floor, levels []float64) []float64 {
	out := make([]float64, len(levels))
	for i, db := range levels {
		out[i] = f.Judge(db)
		f.Follow(db)
	}
	return out
}

// A dropout (digital silence, or a partial frame and then silence) of up
// to 300 ms in a steady background does not move the floor: the frames
// after it are judged against the floor from before it, so the background
// coming back is not speech. Without the rule the floor fell to the gap.
func TestFloorIgnoresADropout(t *testing.T) {
	long := make([]float64, 14) // 280 ms of zeros
	for i := range long {
		long[i] = -100
	}
	for _, gap := range [][]float64{
		{-120, -120},    // 40 ms of zeros
		{-52, -90, -47}, // a partial frame, zeros, a partial frame
		long,
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		f := NewFloor(1, 20)
		levels := append(append(steady(rng, 100, -40), gap...), steady(rng, 50, -40)...)
		ref := run(&f, levels)
		for i := 100 + len(gap); i < len(levels); i++ {
			if levels[i] > ref[i]+12 {
				t.Fatalf("gap %v: frame %d at %.1f dBFS judged against a floor of %.1f: speech", gap, i, levels[i], ref[i])
			}
		}
	}
}

// A room that gets quieter (a motor stops) and stays quieter: after 300 ms
// the floor keeps the new level, and a soft voice 15 dB over it is speech.
func TestFloorFollowsARoomThatGetsQuieter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := NewFloor(1, 20)
	levels := append(steady(rng, 100, -35), steady(rng, 30, -65)...)
	run(&f, levels)
	if ref := f.Judge(-50); ref > -60 {
		t.Fatalf("a voice at -50 dBFS, 600 ms after the room fell to -65, is judged against %.1f", ref)
	}
	// Within the 300 ms, a frame at the old level is the background back:
	g := NewFloor(1, 20)
	run(&g, append(steady(rng, 100, -35), -66, -65, -66))
	if ref := g.Judge(-36); ref < -38 {
		t.Fatalf("the background back after 60 ms judged against %.1f, want the old floor", ref)
	}
}

// A voice that starts right after a dropout is judged against the floor
// from before it: speech, at the same frame as without the dropout.
func TestFloorDropoutThenSpeech(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := NewFloor(1, 20)
	run(&f, append(steady(rng, 100, -40), -120, -120))
	if ref := f.Judge(-20); ref < -43 || ref > -37 || -20 <= ref+12 {
		t.Fatalf("a voice at -20 dBFS after a dropout judged against %.1f, want about -42 (speech)", ref)
	}
}

// Frames the floor holds (the robot's echo) count towards the 300 ms; 40 ms
// frames keep a window of 7; nothing allocates.
func TestFloorHoldAndFrameSizes(t *testing.T) {
	f := NewFloor(1, 20)
	run(&f, []float64{-40, -40, -40, -100})
	for range 20 { // 400 ms of echo held
		f.Hold()
	}
	if ref := f.Judge(-40); ref > -90 {
		t.Errorf("after 400 ms the dip is the room's level, judged against %.1f", ref)
	}
	if g := NewFloor(1, 40); g.size != 7 {
		t.Errorf("40 ms frames: window of %d frames, want 7", g.size)
	}
	if g := NewFloor(1, 10); g.size != 30 {
		t.Errorf("10 ms frames: window of %d frames, want 30", g.size)
	}
	g := NewFloor(1, 20)
	if a := testing.AllocsPerRun(100, func() { g.Judge(-40); g.Follow(-40); g.Hold() }); a != 0 {
		t.Errorf("%v allocations per frame", a)
	}
}
