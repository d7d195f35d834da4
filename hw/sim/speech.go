package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/robot-agent/robot-agent/codec/pcm"
)

// Utterance is one step of a SpeechScript: Speech of voiced signal followed
// by Silence (the noise floor). Either may be zero; a leading
// Utterance{Silence: d} starts a script with silence.
type Utterance struct {
	Speech  time.Duration
	Silence time.Duration
}

// SpeechScript is a deterministic sequence of speech-like bursts and
// silences.
//
// Speech-like means a voiced harmonic signal: a fundamental gliding within
// 120..220 Hz, ten harmonics with 1/k amplitudes, a 4 Hz syllable-rate
// amplitude envelope (never below a quarter of the peak, so the level stays
// well above the noise floor; each burst starts in a syllable's rise) and
// 10 ms ramps at each end. Its RMS is about
// -25 dBFS with peaks near -16 dBFS. The noise floor (MicConfig.NoiseDBFS) is present throughout.
type SpeechScript struct {
	Utterances []Utterance
}

// Duration returns the total length of one pass of the script.
func (s SpeechScript) Duration() time.Duration {
	var d time.Duration
	for _, u := range s.Utterances {
		d += u.Speech + u.Silence
	}
	return d
}

// SpeechStarts returns the offset of the start of each non-empty speech
// burst from the start of the script (first pass).
func (s SpeechScript) SpeechStarts() []time.Duration {
	var out []time.Duration
	var at time.Duration
	for _, u := range s.Utterances {
		if u.Speech > 0 {
			out = append(out, at)
		}
		at += u.Speech + u.Silence
	}
	return out
}

const (
	speechAmp   = 0.28 * pcm.FullScale / 2.93 // 0.28 FS if all 10 harmonics (Σ1/k = 2.93) peaked together
	harmonics   = 10
	rampSeconds = 0.010
	syllableHz  = 4.0
)

// segment is an Utterance in samples.
type segment struct{ speech, silence int64 }

// speechGen produces the script sample by sample; its output depends only on
// the seed and the sample index, not on how reads are sized.
type speechGen struct {
	rate  float64
	segs  []segment
	loop  bool
	idx   int   // current segment
	pos   int64 // sample within current segment
	done  bool
	rng   *rand.Rand
	sigma float64 // noise standard deviation, sample units

	// voice parameters, drawn per segment
	base, depth, glideHz, glidePhase, sylPhase float64
	phase                                      float64 // fundamental phase, radians
}

func newSpeechGen(s SpeechScript, rate int, loop bool, rng *rand.Rand, sigma float64) *speechGen {
	g := &speechGen{rate: float64(rate), loop: loop, rng: rng, sigma: sigma}
	for _, u := range s.Utterances {
		g.segs = append(g.segs, segment{
			speech:  int64(u.Speech.Seconds() * float64(rate)),
			silence: int64(u.Silence.Seconds() * float64(rate)),
		})
	}
	var total int64
	for _, sg := range g.segs {
		total += sg.speech + sg.silence
	}
	if total == 0 {
		g.done = true // nothing to play (also avoids looping on nothing)
	} else {
		g.startSegment()
	}
	return g
}

func (g *speechGen) startSegment() {
	g.base = 150 + 20*g.rng.Float64()     // 150..170 Hz
	g.depth = 15 + 20*g.rng.Float64()     // ±15..35 Hz
	g.glideHz = 0.4 + 0.8*g.rng.Float64() // slow intonation glide
	g.glidePhase = 2 * math.Pi * g.rng.Float64()
	// A burst starts somewhere in the rise of its first syllable, as a
	// voice does (not in the middle of a syllable's decay, which looks
	// like a knock's tail to the VAD's transient guard).
	g.sylPhase = math.Pi / 2 * g.rng.Float64()
	g.phase = 0
}

func (g *speechGen) fill(dst []int16) {
	for i := range dst {
		v := g.sigma * g.rng.NormFloat64()
		if !g.done {
			sg := g.segs[g.idx]
			if g.pos < sg.speech {
				v += g.voice(g.pos, sg.speech)
			}
			g.pos++
			for !g.done && g.pos >= g.segs[g.idx].speech+g.segs[g.idx].silence {
				g.pos = 0
				g.idx++
				if g.idx == len(g.segs) {
					if !g.loop {
						g.done = true
						break
					}
					g.idx = 0
				}
				g.startSegment()
			}
		}
		dst[i] = clamp16(v)
	}
}

// voice returns the voiced signal at sample n of a burst of length total.
func (g *speechGen) voice(n, total int64) float64 {
	t := float64(n) / g.rate
	f0 := g.base + g.depth*math.Sin(2*math.Pi*g.glideHz*t+g.glidePhase)
	f0 = min(max(f0, 120), 220)
	g.phase += 2 * math.Pi * f0 / g.rate
	if g.phase > 2*math.Pi {
		g.phase -= 2 * math.Pi
	}
	var s float64
	for k := 1; k <= harmonics; k++ {
		s += math.Sin(float64(k)*g.phase) / float64(k)
	}
	syl := math.Sin(math.Pi*syllableHz*t + g.sylPhase)
	env := 0.25 + 0.75*syl*syl
	ramp := rampSeconds * g.rate
	if f := float64(n) / ramp; f < 1 {
		env *= f
	}
	if f := float64(total-n) / ramp; f < 1 {
		env *= f
	}
	return speechAmp * env * s
}

func clamp16(v float64) int16 {
	v = math.Round(v)
	if v > math.MaxInt16 {
		return math.MaxInt16
	}
	if v < math.MinInt16 {
		return math.MinInt16
	}
	return int16(v)
}
