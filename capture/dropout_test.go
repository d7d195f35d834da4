package capture

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
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
	s := roomNoise(21, 12*rate)
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

// A mic lost for seconds (hw/portaudio's Source pads the outage with
// digital silence while it reopens the device) in the same noisy room:
// the room's noise coming back after 0.5 s (its first and last frames
// hold 1 ms of the room: 13 dB under it, between the energy detector's
// start threshold and its dip rule), 2 and 3 s of silence starts no
// utterance; a talker who speaks the moment the mic is back is heard at
// once; the silent frames are counted. Before (the floor and the spectral
// noise estimate learnt the silence) every return started an utterance.
func TestVADHoldsThroughMicOutages(t *testing.T) {
	const rate = 16000
	s := roomNoise(23, 15*rate)
	silent := 0
	for _, g := range [][2]float64{{2.001, 2.519}, {4, 6}, {8, 11}} { // one with its edges in mid-frame
		clear(s[int(g[0]*rate):int(g[1]*rate)])
		silent += int(g[1]*50) - int(math.Ceil(g[0]*50)) // whole frames
	}
	for i := 11 * rate; i < 12*rate; i++ { // the talker, from the moment the mic is back
		s[i] += int16(3300 * math.Sin(2*math.Pi*200*float64(i)/rate))
	}
	for _, det := range []string{vad.KindEnergy, DetectorAuto, vad.KindSpectral} {
		starts, reg := runPumpRegistry(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, s)
		// (The utterance starts with its 300 ms pre-roll.)
		if len(starts) != 1 || starts[0] < 10600*time.Millisecond || starts[0] > 11100*time.Millisecond {
			t.Errorf("%s: outages ending at 2.519, 6 and 11 s, a talker from 11 s: utterances at %v, want one, the talker's", det, starts)
		}
		if got := reg.Value(MetricSilentFrames); got != int64(silent) {
			t.Errorf("%s: %s = %d, want %d", det, MetricSilentFrames, got, silent)
		}
	}
}

// A clean recording (a simulation, a TTS file) is digital silence between
// its phrases: there the silence is the room, and every phrase, soft ones
// after loud ones too, starts its utterance, with every detector the pump
// runs by default.
func TestVADCleanRecordingBetweenSilences(t *testing.T) {
	const rate = 16000
	s := make([]int16, 16*rate)
	amps := []float64{3300, 3300, 330, 3300, 200} // -20 dBFS, and -40 and -44 dBFS phrases
	for k, a := range amps {
		at := (1 + 3*k) * rate
		for i := at; i < at+rate; i++ {
			s[i] = int16(a * math.Sin(2*math.Pi*200*float64(i)/rate) * (1 + 0.3*math.Sin(2*math.Pi*4*float64(i)/rate)))
		}
	}
	for _, det := range []string{vad.KindEnergy, DetectorAuto} {
		starts, _ := runPumpRegistry(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, s)
		if len(starts) != len(amps) {
			t.Errorf("%s: %d phrases between digital silences: utterances at %v", det, len(amps), starts)
		}
	}
}

// lateMic is a pcmSource whose first lostSamples are a stand-in for a mic
// that has not opened yet (LostReporter), as hw/portaudio's Source reports
// while degraded.
type lateMic struct {
	pcmSource
	lostSamples int
}

func (m *lateMic) Lost() bool { return m.pos <= m.lostSamples }

// A mic that opens 2 s late (a USB mic plugged in after start): the
// Source reads silence until then and says so (LostReporter); the room's
// noise that arrives with the mic starts no utterance, and a talker later
// is heard. The same samples from a source that does not say so start an
// utterance at the mic's opening: a room as quiet as digital silence
// cannot be told from a mic that is not there.
func TestVADMicThatOpensLate(t *testing.T) {
	const rate = 16000
	s := roomNoise(25, 8*rate)
	clear(s[:2*rate])
	for i := 6 * rate; i < 7*rate; i++ {
		s[i] += int16(3300 * math.Sin(2*math.Pi*200*float64(i)/rate))
	}
	for _, det := range []string{vad.KindEnergy, DetectorAuto, vad.KindSpectral} {
		clk := clock.NewFake()
		starts, reg := runPumpOn(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, clk, &lateMic{pcmSource: pcmSource{clk: clk, s: s}, lostSamples: 2 * rate})
		if len(starts) != 1 || starts[0] < 5600*time.Millisecond || starts[0] > 6100*time.Millisecond {
			t.Errorf("%s: a mic open from 2 s, a talker from 6 s: utterances at %v, want one, the talker's", det, starts)
		}
		if got := reg.Value(MetricSilentFrames); got != 2*50 {
			t.Errorf("%s: %s = %d, want %d", det, MetricSilentFrames, got, 2*50)
		}
		plain, _ := runPumpRegistry(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, s)
		if len(plain) == 0 || plain[0] > 2100*time.Millisecond {
			t.Errorf("%s: without LostReporter the late mic started utterances at %v, none at its opening: the scene does not test the capability", det, plain)
		}
	}
}

// roomNoise is n samples of white noise at about -45 dBFS.
func roomNoise(seed uint64, n int) []int16 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(rng.NormFloat64() * 180)
	}
	return s
}
