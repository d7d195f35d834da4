// Package quality measures how close a processed speech signal is to its
// original: log-spectral distance, normalised cross-correlation, and the
// delay between the two. Codec and concealment benchmarks use it on WAV
// files or sample slices.
//
// All functions are pure and safe for concurrent use; they allocate.
package quality

import (
	"math"

	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/fft"
)

// NCC is the normalised cross-correlation of a and b over their common
// length: 1 for identical waveforms, 0 for unrelated ones (0 if either is
// silent). It is pcm.NCC.
func NCC(a, b []int16) float64 { return pcm.NCC(a, b) }

// Delay returns the lag d in 0..maxLag at which x[d:] best matches ref
// (highest NCC over the first window samples of ref), and that NCC.
func Delay(ref, x []int16, maxLag, window int) (int, float64) {
	window = min(window, len(ref))
	best, bestC := 0, math.Inf(-1)
	for d := 0; d <= maxLag && d+window <= len(x); d++ {
		if c := NCC(ref[:window], x[d:d+window]); c > bestC {
			best, bestC = d, c
		}
	}
	return best, bestC
}

// LSD is the log-spectral distance in dB between ref and x (aligned, same
// rate): the mean over frames of the RMS over frequency bins of
// 10·log10(Pref/Px). Frames are 32 ms with a Hann window and 50 % overlap;
// only frames where ref is within 40 dB of its loudest frame count (speech,
// not pauses); bins run from the first above 0 Hz up to maxHz; and both
// spectra are floored 50 dB below the reference frame's strongest bin, so
// inaudible differences next to it do not dominate. With mask set, only
// frames that overlap a sample i with mask[i] true count (for example the
// concealed packets).
func LSD(ref, x []int16, rate, maxHz int, mask []bool) float64 {
	n := fft.Size(rate * 32 / 1000)
	win := make([]float64, n)
	for i := range win {
		win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
	}
	buf := make([]complex128, n)
	spec := func(s []int16, p []float64) {
		for i := range buf {
			buf[i] = complex(float64(s[i])*win[i], 0)
		}
		fft.Transform(buf)
		for i := range p {
			p[i] = real(buf[i])*real(buf[i]) + imag(buf[i])*imag(buf[i])
		}
	}
	type frame struct {
		off  int
		e    float64
		r, x []float64
	}
	var frames []frame
	maxE := 0.0
	for off := 0; off+n <= len(ref) && off+n <= len(x); off += n / 2 {
		f := frame{off: off, r: make([]float64, n/2), x: make([]float64, n/2)}
		spec(ref[off:off+n], f.r)
		spec(x[off:off+n], f.x)
		for _, v := range f.r {
			f.e += v
		}
		maxE = max(maxE, f.e)
		frames = append(frames, f)
	}
	bins := min(n/2, n*maxHz/rate)
	sum, cnt := 0.0, 0
	for _, f := range frames {
		if f.e == 0 || f.e < maxE*1e-4 || (mask != nil && !any(mask, f.off, f.off+n)) {
			continue
		}
		peak := 0.0
		for _, v := range f.r {
			peak = max(peak, v)
		}
		floor := peak * 1e-5
		d := 0.0
		for k := 1; k < bins; k++ {
			v := 10 * math.Log10(max(f.r[k], floor)/max(f.x[k], floor))
			d += v * v
		}
		sum += math.Sqrt(d / float64(bins-1))
		cnt++
	}
	if cnt == 0 {
		return 0
	}
	return sum / float64(cnt)
}

func any(mask []bool, from, to int) bool {
	for i := from; i < to && i < len(mask); i++ {
		if mask[i] {
			return true
		}
	}
	return false
}

// SegmentLSD is LSD restricted to the given segments of length samples
// starting at starts (for example exactly the lost packets of a trace):
// each segment gets its own Hann window, zero-padded to a power of two.
// Segments where ref is more than 40 dB below its loudest segment of that
// length (pauses) are skipped; the floor is as in LSD. It returns the mean
// and the number of segments counted.
func SegmentLSD(ref, x []int16, rate, maxHz int, starts []int, length int) (float64, int) {
	n := fft.Size(length)
	win := make([]float64, length)
	for i := range win {
		win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(length))
	}
	buf := make([]complex128, n)
	spec := func(s []int16) []float64 {
		clear(buf)
		for i := range win {
			buf[i] = complex(float64(s[i])*win[i], 0)
		}
		fft.Transform(buf)
		p := make([]float64, n/2)
		for i := range p {
			p[i] = real(buf[i])*real(buf[i]) + imag(buf[i])*imag(buf[i])
		}
		return p
	}
	energy := func(s []int16) float64 {
		e := 0.0
		for _, v := range s {
			e += float64(v) * float64(v)
		}
		return e
	}
	maxE := 0.0
	for off := 0; off+length <= len(ref); off += length / 2 {
		maxE = max(maxE, energy(ref[off:off+length]))
	}
	bins := min(n/2, n*maxHz/rate)
	sum, cnt := 0.0, 0
	for _, s := range starts {
		if s < 0 || s+length > len(ref) || s+length > len(x) {
			continue
		}
		if e := energy(ref[s : s+length]); e == 0 || e < maxE*1e-4 {
			continue
		}
		r, y := spec(ref[s:s+length]), spec(x[s:s+length])
		peak := 0.0
		for _, v := range r {
			peak = max(peak, v)
		}
		floor := peak * 1e-5
		d := 0.0
		for k := 1; k < bins; k++ {
			v := 10 * math.Log10(max(r[k], floor)/max(y[k], floor))
			d += v * v
		}
		sum += math.Sqrt(d / float64(bins-1))
		cnt++
	}
	if cnt == 0 {
		return 0, 0
	}
	return sum / float64(cnt), cnt
}
