package vad

import "math"

// fft is an in-place iterative radix-2 complex FFT of a fixed power-of-two
// size with precomputed bit-reversal and twiddle tables; transform does
// not allocate.
type fft struct {
	n        int
	rev      []int
	cos, sin []float64 // cos/sin(2πk/n), k < n/2
}

func newFFT(n int) *fft {
	if n < 2 || n&(n-1) != 0 {
		panic("vad: fft size must be a power of two")
	}
	f := &fft{n: n, rev: make([]int, n), cos: make([]float64, n/2), sin: make([]float64, n/2)}
	bits := 0
	for 1<<bits < n {
		bits++
	}
	for i := range f.rev {
		r := 0
		for b := range bits {
			if i&(1<<b) != 0 {
				r |= 1 << (bits - 1 - b)
			}
		}
		f.rev[i] = r
	}
	for k := range f.cos {
		a := 2 * math.Pi * float64(k) / float64(n)
		f.cos[k], f.sin[k] = math.Cos(a), math.Sin(a)
	}
	return f
}

// transform replaces (re, im) by its forward DFT X[k] = Σ x[t]·e^(−2πikt/n).
func (f *fft) transform(re, im []float64) {
	n := f.n
	re, im = re[:n], im[:n]
	for i, j := range f.rev {
		if i < j {
			re[i], re[j] = re[j], re[i]
			im[i], im[j] = im[j], im[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size>>1, n/size
		for start := 0; start < n; start += size {
			for k := range half {
				wr, wi := f.cos[k*step], -f.sin[k*step]
				a, b := start+k, start+k+half
				tr := wr*re[b] - wi*im[b]
				ti := wr*im[b] + wi*re[b]
				re[b], im[b] = re[a]-tr, im[a]-ti
				re[a] += tr
				im[a] += ti
			}
		}
	}
}
