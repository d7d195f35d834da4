package sim

import "github.com/robot-agent/robot-agent/codec/wav"

// toMono16k converts a decoded WAV to 16 kHz mono: stereo is averaged and
// the rate changed by linear interpolation. There is no anti-aliasing
// filter, so downsampling folds content above 8 kHz back into the band;
// that is acceptable for a simulated microphone but not for production
// format conversion.
func toMono16k(a wav.Audio) []int16 {
	return resampleLinear(a.Mono(), a.SampleRate, 16000)
}

// resampleLinear changes the rate of mono samples from in to out Hz.
func resampleLinear(s []int16, in, out int) []int16 {
	if in == out || len(s) == 0 {
		return s
	}
	n := int(int64(len(s)) * int64(out) / int64(in))
	dst := make([]int16, n)
	for j := range dst {
		// Source position j*in/out as integer part and remainder.
		num := int64(j) * int64(in)
		i := int(num / int64(out))
		frac := float64(num%int64(out)) / float64(out)
		a := float64(s[i])
		b := a
		if i+1 < len(s) {
			b = float64(s[i+1])
		}
		dst[j] = clamp16(a + (b-a)*frac)
	}
	return dst
}
