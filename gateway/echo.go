package gateway

import (
	"math"

	"github.com/robot-agent/robot-agent/codec/resample"
)

// Upsample16to24 converts 16 kHz mono PCM to 24 kHz with the project's
// band-limited resampler, compensating its group delay so the output lines
// up with the input (len(out) = ceil(1.5·len(in))). It is deterministic.
func Upsample16to24(in []int16) []int16 {
	if len(in) == 0 {
		return nil
	}
	r, err := resample.New(16000, 24000, resample.QualityDefault)
	if err != nil {
		panic("gateway: 16→24 kHz resampler: " + err.Error()) // fixed rates: cannot fail
	}
	want := r.OutLen(len(in))
	d := int(math.Round(r.Delay()))
	// Feed enough trailing silence to flush the filter's delay.
	pad := make([]int16, (d*2+2)/3+2)
	out := make([]int16, r.OutLen(len(in))+r.OutLen(len(pad)))
	n := r.Process(out, in)
	n += r.Process(out[n:], pad)
	out = out[:n]
	if d > len(out) {
		d = len(out)
	}
	out = out[d:]
	if len(out) > want {
		out = out[:want]
	}
	return out
}
