package aec

import "math"

// fracReader reads the far-end ring at fractional positions: a
// Kaiser-windowed sinc of fracTaps taps, fracPhases phases with linear
// interpolation between them (a tone up to 6.4 kHz within 0.1 dB at the
// fractions TestFracReaderResponse tries). At fraction 0 the kernel is a unit
// impulse, so an integer position reads the samples unchanged. It does not
// allocate after construction.
type fracReader struct {
	tab [][fracTaps]float32 // fracPhases+1 rows
	buf []int16             // ring samples around the block
}

const (
	fracHalf   = 16
	fracTaps   = 2 * fracHalf
	fracPhases = 256
	fracBeta   = 7.0
	// fracMaxBlock: the longest block read at once (samples).
	fracMaxBlock = FrameSamples
)

func newFracReader() *fracReader {
	r := &fracReader{tab: make([][fracTaps]float32, fracPhases+1), buf: make([]int16, 2*fracMaxBlock+2*fracTaps)}
	i0 := besselI0(fracBeta)
	for ph := range fracPhases + 1 {
		frac := float64(ph) / fracPhases
		var sum float64
		var row [fracTaps]float64
		for j := range fracTaps {
			// Tap j weighs sample floor(pos) - fracHalf + 1 + j.
			x := float64(j-fracHalf+1) - frac
			t := x / (fracHalf + 1)
			w := 0.0
			if t > -1 && t < 1 {
				w = besselI0(fracBeta*math.Sqrt(1-t*t)) / i0
			}
			row[j] = sinc(x) * w
			sum += row[j]
		}
		for j := range row {
			r.tab[ph][j] = float32(row[j] / sum)
		}
	}
	return r
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

func besselI0(x float64) float64 {
	s, t := 1.0, 1.0
	for k := 1; k < 50; k++ {
		t *= (x / 2) / float64(k)
		s += t * t
		if t*t < 1e-12*s {
			break
		}
	}
	return s
}

// read fills dst with the ring of ref at positions base+frac+i·step
// (0 ≤ frac < 1, step within 1 ± 0.1 %). len(dst) ≤ fracMaxBlock.
func (r *fracReader) read(ref *Reference, dst []int16, base int64, frac, step float64) {
	if frac == 0 && step == 1 {
		ref.readAt(dst, base)
		return
	}
	n := len(dst)
	last := int(frac + float64(n-1)*step)
	from := base - fracHalf + 1
	span := last + fracTaps
	buf := r.buf[:span]
	ref.readAt(buf, from)
	for i := range dst {
		p := frac + float64(i)*step
		k := int(p)
		f := (p - float64(k)) * fracPhases
		ph := int(f)
		w := float32(f - float64(ph))
		r0, r1 := &r.tab[ph], &r.tab[min(ph+1, fracPhases)]
		s := buf[k : k+fracTaps]
		var acc float32
		for j := range fracTaps {
			c := r0[j] + w*(r1[j]-r0[j])
			acc += c * float32(s[j])
		}
		dst[i] = sat16(acc)
	}
}

func sat16(v float32) int16 {
	if v >= 0 {
		v += 0.5
	} else {
		v -= 0.5
	}
	if v > 32767 {
		return 32767
	}
	if v < -32768 {
		return -32768
	}
	return int16(v)
}
