package quality

import (
	"math"
	"math/rand/v2"
	"testing"
)

func tone(n int, f, rate float64, amp float64) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*f*float64(i)/rate))
	}
	return out
}

func TestNCC(t *testing.T) {
	a := tone(1000, 440, 16000, 8000)
	neg := make([]int16, len(a))
	for i, v := range a {
		neg[i] = -v
	}
	for _, tt := range []struct {
		name string
		b    []int16
		want float64
	}{{"same", a, 1}, {"inverted", neg, -1}, {"silent", make([]int16, 1000), 0}} {
		if got := NCC(a, tt.b); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: NCC %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ref := make([]int16, 4000)
	for i := range ref {
		ref[i] = int16(rng.IntN(20000) - 10000)
	}
	x := append(make([]int16, 37), ref...)
	if d, c := Delay(ref, x, 100, 2000); d != 37 || c < 0.999 {
		t.Errorf("Delay = %d (NCC %.3f), want 37", d, c)
	}
}

func TestLSD(t *testing.T) {
	const rate = 16000
	// White noise: every bin is well above the floor.
	ref := make([]int16, rate)
	wn := rand.New(rand.NewPCG(5, 6))
	for i := range ref {
		ref[i] = int16(wn.NormFloat64() * 4000)
	}
	if d := LSD(ref, ref, rate, rate/2, nil); d != 0 {
		t.Errorf("LSD of a signal with itself = %v", d)
	}
	half := make([]int16, len(ref))
	for i, v := range ref {
		half[i] = v / 2
	}
	// Halving the amplitude is 6.02 dB in every bin.
	if d := LSD(ref, half, rate, rate/2, nil); math.Abs(d-6.02) > 0.3 {
		t.Errorf("LSD against half amplitude = %.2f dB, want about 6", d)
	}
	// A mask selecting nothing counts no frame.
	if d := LSD(ref, half, rate, rate/2, make([]bool, len(ref))); d != 0 {
		t.Errorf("LSD with an empty mask = %v", d)
	}
	noisy := make([]int16, len(ref))
	rng := rand.New(rand.NewPCG(3, 4))
	for i, v := range ref {
		noisy[i] = v + int16(rng.IntN(2000)-1000)
	}
	// Tones: the bins far from the partials sit under the floor in both
	// and count as equal, so added noise shows up there.
	tones := tone(rate, 300, rate, 8000)
	for i, v := range tones {
		noisy[i] = v + int16(rng.IntN(2000)-1000)
	}
	if d := LSD(tones, noisy, rate, rate/2, nil); d <= 1 || d > 40 {
		t.Errorf("LSD of a tone with noise added = %.2f dB", d)
	}
}

func TestSegmentLSD(t *testing.T) {
	const rate = 24000
	wn := rand.New(rand.NewPCG(7, 8))
	ref := make([]int16, rate)
	for i := range ref {
		ref[i] = int16(wn.NormFloat64() * 4000)
	}
	x := append([]int16(nil), ref...)
	for i := 4800; i < 5280; i++ { // one 20 ms segment silenced
		x[i] = 0
	}
	if d, n := SegmentLSD(ref, x, rate, rate/2, []int{0, 2400}, 480); d != 0 || n != 2 {
		t.Errorf("untouched segments: %.2f dB over %d", d, n)
	}
	// Silence against noise: every bin hits the 50 dB floor.
	if d, n := SegmentLSD(ref, x, rate, rate/2, []int{4800}, 480); n != 1 || d < 30 {
		t.Errorf("silenced segment: %.2f dB over %d, want the floor's ~50", d, n)
	}
	if _, n := SegmentLSD(ref, x, rate, rate/2, []int{-1, rate}, 480); n != 0 {
		t.Errorf("out-of-range segments counted: %d", n)
	}
}
