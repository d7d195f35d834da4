package duplex

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"

	"github.com/robot-agent/robot-agent/fft"
)

// irRegularisation: EstimateIR divides by the played signal's spectrum
// plus this fraction of its mean power, so the bands the signal hardly
// excites (pink noise's top octave, a speaker's low end) add no noise.
const irRegularisation = 1e-3

// EstimateIR estimates the echo path's impulse response from the same
// recording MeasureEcho uses (a few seconds of broadband noise played and
// recorded, make hil): the regularised deconvolution H = Y·X* / (|X|² + ε)
// of the whole recording by the whole played signal, both zero-padded
// past their linear convolution. lag is the direct path's delay
// (MeasureEcho's); the response returned starts pre samples before it and
// is length samples long (at rate), in the recording's units per unit
// played (the echo gain is in it). Give it to duplex-bench (--ir-wav) to
// run the capture chain in the robot's own room.
func EstimateIR(played, recorded []int16, rate, lag, pre, length int) ([]float64, error) {
	start := lag - pre
	if len(played) < rate/2 || length <= 0 || pre < 0 || start < 0 || start+len(played) > len(recorded) {
		return nil, fmt.Errorf("duplex: estimate impulse response: need at least 0.5 s played, a recording from %d samples on, and a positive length (have %d and %d samples)", max(start, 0), len(played), len(recorded))
	}
	n := fft.Size(len(played) + length)
	x, y := make([]complex128, n), make([]complex128, n)
	for i, v := range played {
		x[i] = complex(float64(v), 0)
	}
	seg := recorded[start:min(len(recorded), start+len(played)+length)]
	for i, v := range seg {
		y[i] = complex(float64(v), 0)
	}
	fft.Transform(x)
	fft.Transform(y)
	var mean float64
	for _, v := range x {
		mean += real(v)*real(v) + imag(v)*imag(v)
	}
	if mean == 0 {
		return nil, fmt.Errorf("duplex: estimate impulse response: the played signal is silent")
	}
	eps := irRegularisation * mean / float64(n)
	for k := range y {
		p := real(x[k])*real(x[k]) + imag(x[k])*imag(x[k])
		y[k] = y[k] * cmplx.Conj(x[k]) / complex(p+eps, 0)
	}
	fft.Inverse(y)
	ir := make([]float64, length)
	for i := range ir {
		ir[i] = real(y[i])
	}
	// The recording's noise comes out of the division as a white floor
	// along the whole response: summed over a second of taps it can
	// outweigh the room's tail (a canceller cannot remove it, a real room
	// does not have it). Its level is what the deconvolution gives before
	// the direct path (the circular result's end: nothing arrives there).
	// The measured response ends at the last 50 ms frame (long enough that
	// the floor's own fluctuation stays well under the margin) more than
	// irFloorDB above it; the room's tail goes on under the floor, so from
	// there the response is the decay fitted to the measured frames
	// (ISO 3382-1's compensation for the noise floor), continued as
	// decaying noise with a 10 ms crossfade.
	var noise float64
	tail := min(length, n/4)
	for _, v := range y[n-tail:] {
		noise += real(v) * real(v)
	}
	noise /= float64(tail)
	extendTail(ir, noise*math.Pow(10, irFloorDB/10), rate/20, rate/100)
	return ir, nil
}

// extendTail replaces the part of ir after its last frame-long frame with
// a mean square above floor by the decay fitted (least squares on the
// frames' levels in dB, from the frame after the strongest one) to the
// frames before, as seeded noise, crossfading over fade samples; with
// fewer than two such frames or no decay, the response is cut there.
func extendTail(ir []float64, floor float64, frame, fade int) {
	levels := make([]float64, len(ir)/frame) // mean square of each frame
	end, peak := 0, 0
	for j := range levels {
		for _, v := range ir[j*frame : (j+1)*frame] {
			levels[j] += v * v
		}
		levels[j] /= float64(frame)
		if levels[j] > floor {
			end = (j + 1) * frame
		}
		if levels[j] > levels[peak] {
			peak = j
		}
	}
	var sx, sy, sxx, sxy, m float64
	for j := peak + 1; (j+1)*frame <= end; j++ {
		x, y := float64(j*frame), 10*math.Log10(levels[j]+1e-300)
		sx, sy, sxx, sxy, m = sx+x, sy+y, sxx+x*x, sxy+x*y, m+1
	}
	slope := 0.0 // dB per sample
	if m >= 2 {
		slope = (m*sxy - sx*sy) / (m*sxx - sx*sx)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := end; i < len(ir); i++ {
		var ext float64
		if slope < 0 {
			// The fitted level at sample i (a frame's level, fitted at its
			// start, is that of its centre, frame/2 later).
			db := (sy + slope*(float64(i-frame/2)*m-sx)) / m
			ext = math.Sqrt(math.Pow(10, db/10)) * rng.NormFloat64()
		}
		if d := i - end; d < fade {
			w := 0.5 + 0.5*math.Cos(math.Pi*float64(d)/float64(fade))
			ir[i] = w*ir[i] + (1-w)*ext
		} else {
			ir[i] = ext
		}
	}
}

// irFloorDB: EstimateIR keeps the response up to its last 50 ms frame this
// far above the deconvolution's noise floor.
const irFloorDB = 6.0
