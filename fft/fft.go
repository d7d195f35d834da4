// Package fft is an in-place radix-2 fast Fourier transform for the
// offline measurements (speech quality, echo path estimation); the audio
// fast lane does not use it.
//
// # Concurrency
//
// The functions are pure: they touch only the slice they are given.
package fft

import (
	"math"
	"math/cmplx"
)

// Transform replaces a by its discrete Fourier transform
// (X[k] = Σ a[n]·e^(−2πikn/N)); len(a) must be a power of two (it panics
// otherwise).
func Transform(a []complex128) {
	n := len(a)
	if n&(n-1) != 0 {
		panic("fft: length is not a power of two")
	}
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for l := 2; l <= n; l <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(l)))
		for i := 0; i < n; i += l {
			wk := complex(1, 0)
			for k := 0; k < l/2; k++ {
				u, v := a[i+k], a[i+k+l/2]*wk
				a[i+k], a[i+k+l/2] = u+v, u-v
				wk *= w
			}
		}
	}
}

// Inverse replaces a by its inverse transform (Transform's inverse,
// scaled by 1/N); len(a) must be a power of two.
func Inverse(a []complex128) {
	for i, v := range a {
		a[i] = cmplx.Conj(v)
	}
	Transform(a)
	s := 1 / float64(len(a))
	for i, v := range a {
		a[i] = complex(real(v)*s, -imag(v)*s)
	}
}

// Size returns the smallest power of two ≥ n (1 for n ≤ 1).
func Size(n int) int {
	s := 1
	for s < n {
		s <<= 1
	}
	return s
}
