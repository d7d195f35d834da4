package fft

import (
	"math"
	"math/cmplx"
	"testing"
)

// Transform matches the direct DFT, and Inverse undoes it.
func TestTransformMatchesDFT(t *testing.T) {
	for _, n := range []int{1, 2, 8, 64} {
		a := make([]complex128, n)
		for i := range a {
			a[i] = complex(math.Sin(float64(i*i)+1), math.Cos(float64(3*i)))
		}
		want := make([]complex128, n)
		for k := range want {
			for j, v := range a {
				want[k] += v * cmplx.Exp(complex(0, -2*math.Pi*float64(j*k)/float64(n)))
			}
		}
		got := append([]complex128(nil), a...)
		Transform(got)
		for k := range got {
			if cmplx.Abs(got[k]-want[k]) > 1e-9*float64(n) {
				t.Fatalf("n=%d: X[%d] = %v, want %v", n, k, got[k], want[k])
			}
		}
		Inverse(got)
		for k := range got {
			if cmplx.Abs(got[k]-a[k]) > 1e-12*float64(n) {
				t.Fatalf("n=%d: inverse[%d] = %v, want %v", n, k, got[k], a[k])
			}
		}
	}
}

func TestSizeAndPanic(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 4, 1000: 1024, 1024: 1024} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %d, want %d", n, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("length 3 did not panic")
		}
	}()
	Transform(make([]complex128, 3))
}
