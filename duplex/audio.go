package duplex

import (
	"math"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
)

// ToMono converts decoded audio to mono at rate: channels averaged, the
// rate changed with codec/resample (linear interpolation for ratios it
// cannot do exactly).
func ToMono(a wav.Audio, rate int) []int16 {
	mono := a.Mono()
	if a.SampleRate == rate {
		return mono
	}
	if r, err := resample.New(a.SampleRate, rate, resample.QualityDefault); err == nil {
		out := make([]int16, r.OutLen(len(mono)))
		return out[:r.Process(out, mono)]
	}
	n := int(int64(len(mono)) * int64(rate) / int64(a.SampleRate))
	out := make([]int16, n)
	for j := range out {
		pos := float64(j) * float64(a.SampleRate) / float64(rate)
		i := int(pos)
		f := pos - float64(i)
		x0 := float64(mono[min(i, len(mono)-1)])
		x1 := float64(mono[min(i+1, len(mono)-1)])
		out[j] = int16(x0 + (x1-x0)*f)
	}
	return out
}

// frameDB returns the level of each frame of n samples in dBFS.
func frameDB(s []int16, n int) []float64 {
	out := make([]float64, (len(s)+n-1)/n)
	for k := range out {
		f := s[k*n : min((k+1)*n, len(s))]
		var e float64
		for _, v := range f {
			e += float64(v) * float64(v)
		}
		out[k] = 10*math.Log10(e/float64(len(f))+1e-9) - 90.309 // 20·log10(32768)
	}
	return out
}

// SilentDBFS: a recording whose loudest 10 ms is under this level holds no
// usable sound (16-bit dither alone is about -90 dBFS).
const SilentDBFS = -80.0

// PeakLevel is the level in dBFS of the loudest 10 ms of s (rate Hz);
// about -180 for digital silence.
func PeakLevel(s []int16, rate int) float64 {
	peak := math.Inf(-1)
	for _, v := range frameDB(s, max(rate/100, 1)) {
		peak = max(peak, v)
	}
	return peak
}

// ActiveLevel is the RMS level in dBFS of the frames (20 ms) within 30 dB
// of the loudest: a simple active speech level.
func ActiveLevel(s []int16, rate int) float64 {
	db := frameDB(s, rate/50)
	peak := math.Inf(-1)
	for _, v := range db {
		peak = max(peak, v)
	}
	var e float64
	var n int
	for _, v := range db {
		if v > peak-30 {
			e += math.Pow(10, v/10)
			n++
		}
	}
	if n == 0 {
		return -120
	}
	return 10 * math.Log10(e/float64(n))
}

// Trim removes leading and trailing frames more than 40 dB below the
// loudest (silence around a recorded phrase).
func Trim(s []int16, rate int) []int16 {
	n := rate / 100
	db := frameDB(s, n)
	peak := math.Inf(-1)
	for _, v := range db {
		peak = max(peak, v)
	}
	first, last := -1, -1
	for k, v := range db {
		if v > peak-40 {
			if first < 0 {
				first = k
			}
			last = k
		}
	}
	if first < 0 {
		return s
	}
	return s[first*n : min((last+1)*n, len(s))]
}

// Scale multiplies s by 10^(db/20) with saturation, in place.
func Scale(s []int16, db float64) {
	g := math.Pow(10, db/20)
	for i, v := range s {
		s[i] = sat(float64(v) * g)
	}
}

func sat(v float64) int16 {
	v = math.Round(v)
	if v > 32767 {
		return 32767
	}
	if v < -32768 {
		return -32768
	}
	return int16(v)
}

// Labels marks each 20 ms frame of clean speech s (16 kHz) that holds
// speech: level above max(-60 dBFS, loudest frame - 40 dB).
func Labels(s []int16) []bool {
	db := frameDB(s, 320)
	peak := math.Inf(-1)
	for _, v := range db {
		peak = max(peak, v)
	}
	th := max(-60, peak-40)
	out := make([]bool, len(db))
	for i, v := range db {
		out[i] = v > th
	}
	return out
}
