package gateway

// Upsample16to24 converts 16 kHz mono PCM to 24 kHz (3/2) by linear
// interpolation. The embedded gateway only needs an audible echo.
func Upsample16to24(in []int16) []int16 {
	if len(in) == 0 {
		return nil
	}
	n := len(in) * 3 / 2
	out := make([]int16, n)
	for i := range out {
		pos := i * 2 // position in units of 1/3 input sample
		j, frac := pos/3, pos%3
		a := int32(in[j])
		b := a
		if j+1 < len(in) {
			b = int32(in[j+1])
		}
		out[i] = int16(a + (b-a)*int32(frac)/3)
	}
	return out
}
