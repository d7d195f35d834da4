package capture

import (
	"testing"

	"github.com/robot-agent/robot-agent/vad"
)

// decisionGuard is an onset guard with a decision signal: the VAD judges
// sig, whatever the frame sent holds.
type decisionGuard struct{ sig []int16 }

func (decisionGuard) EchoDominated() bool       { return false }
func (g *decisionGuard) DecisionFrame() []int16 { return g.sig }

// With a guard that has a decision signal (a dual-path echo canceller),
// the VAD judges that signal, not the audio sent: loud audio with a quiet
// decision signal starts nothing, quiet audio with a loud one starts an
// utterance; a decision frame of another length is ignored. For both the
// energy VAD and an external detector.
func TestVADJudgesTheDecisionSignal(t *testing.T) {
	for _, det := range []string{vad.KindEnergy, vad.KindSpectral} {
		run := func(audio, sig []int16) int64 {
			p := newBarePump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}})
			g := &decisionGuard{}
			p.SetOnsetGuard(g)
			for i := range 200 {
				cur := &p.ring[p.head]
				g.sig = quietFrame
				copy(cur.samples, quietFrame)
				if i%40 >= 20 && i%40 < 35 {
					copy(cur.samples, audio)
					g.sig = sig
				}
				p.process(cur)
			}
			return p.utterances.Value()
		}
		if n := run(loudFrame, quietFrame); n != 0 {
			t.Errorf("%s: loud audio, quiet decision signal: %d utterances, want 0", det, n)
		}
		if n := run(quietFrame, loudFrame); n == 0 {
			t.Errorf("%s: quiet audio, loud decision signal: no utterance", det)
		}
		if n := run(loudFrame, loudFrame[:160]); n == 0 {
			t.Errorf("%s: a decision frame of another length was not ignored", det)
		}
	}
}
