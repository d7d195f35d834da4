package capture

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/vad"
)

// pinkSteps is pink noise (Kellet's filter) at -50 dBFS whose level steps
// by steps[k] dB for 4 s at a time, 4 s apart, after 6 s of the base
// level, then a voiced phrase (a 4 Hz-modulated 200 Hz tone, 1 s at about
// -30 dBFS) 2 s after the last step.
func pinkSteps(seed uint64, steps []float64) (s []int16, phrase time.Duration) {
	const rate = 16000
	n := (6 + 8*len(steps) + 4) * rate
	rng := rand.New(rand.NewPCG(seed, 9))
	s = make([]int16, n)
	var b0, b1, b2 float64
	for i := range s {
		w := rng.NormFloat64()
		b0 = 0.99765*b0 + w*0.0990460
		b1 = 0.96300*b1 + w*0.2965164
		b2 = 0.57000*b2 + w*1.0526913
		lvl := -50.0
		if t := i/rate - 6; t >= 0 && t/8 < len(steps) && t%8 < 4 {
			lvl += steps[t/8]
		}
		v := (b0 + b1 + b2 + w*0.1848) / 3.5 // about unit RMS
		s[i] = int16(v * 32768 * math.Pow(10, lvl/20))
	}
	at := (6 + 8*len(steps)) * rate
	for i := at; i < at+rate; i++ {
		s[i] += int16(1000 * math.Sin(2*math.Pi*200*float64(i)/rate) * (1 + 0.3*math.Sin(2*math.Pi*4*float64(i)/rate)))
	}
	return s, time.Duration(at) * time.Second / rate
}

// A room whose noise rises by a few dB at once (a fan speeding up) starts
// no utterance with the default detector, whose onset step calls such a
// step speech for a few hops: those calls are provisional, and the pump
// waits for the detector to confirm them (it revokes them instead). The
// phrase after the steps still starts its utterance, within 100 ms.
func TestNoiseStepStartsNoUtterance(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		s, phrase := pinkSteps(seed, []float64{2, 3, 4, 3, 2})
		for _, c := range []struct {
			name string
			vad  VADConfig
		}{
			{"auto", VADConfig{Detector: DetectorAuto}},
			{"spectral+fast_onset", VADConfig{Detector: vad.KindSpectral, FastOnset: true}},
			{"spectral", VADConfig{Detector: vad.KindSpectral}},
		} {
			starts, _ := runPumpRegistry(t, Config{Mode: ModeVAD, VAD: c.vad}, s)
			if len(starts) != 1 {
				t.Errorf("seed %d, %s: utterances at %v, want one, at the phrase (%v)", seed, c.name, starts, phrase)
				continue
			}
			// The first frame sent is the pre-roll's: 300 ms before the
			// frame that started it.
			if d := starts[0] + 300*time.Millisecond - phrase; d < 0 || d > 100*time.Millisecond {
				t.Errorf("seed %d, %s: the phrase's utterance started %v after it, want 0..100 ms", seed, c.name, d)
			}
		}
	}
}
