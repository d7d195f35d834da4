package capture

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/vad"
)

// A mic that loses 40 ms of audio (digital silence) now and then in a
// noisy room: the energy detector's floor does not follow the gap down, so
// the room's noise after it starts no utterance, and a talker later in the
// stream is still heard. Before vad.Floor's dip rule the first gap
// started an utterance that the noise, 60 dB over a floor rising 1 dB/s,
// kept going. The spectral detector (auto), whose noise estimate follows
// smoothed minima, is checked on the same stream.
func TestVADIgnoresMicDropouts(t *testing.T) {
	const rate = 16000
	rng := rand.New(rand.NewPCG(21, 22))
	s := make([]int16, 12*rate)
	for i := range s {
		s[i] = int16(rng.NormFloat64() * 180) // about -45 dBFS
	}
	gaps := 0
	for at := 1.3; at < 9; at += 1.7 {
		clear(s[int(at*rate) : int(at*rate)+640])
		gaps++
	}
	for i := 10 * rate; i < 11*rate; i++ { // a talker from 10 s: a 200 Hz voice at -20 dBFS
		s[i] += int16(3300 * math.Sin(2*math.Pi*200*float64(i)/rate))
	}
	for _, det := range []string{vad.KindEnergy, DetectorAuto} {
		starts, _ := runPump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, s)
		if len(starts) != 1 || starts[0] < 9500*time.Millisecond {
			t.Errorf("%s: %d gaps and a talker at 10 s: utterances at %v, want one, the talker's", det, gaps, starts)
		}
	}
}
