package capture

import (
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/vad"
)

// bridgeGuard is a dual-path canceller's guard as the pump sees it: the
// VAD judges sig, and use is OnsetFrame's flag (the canceller let the
// frame through while the far end played).
type bridgeGuard struct {
	sig []int16
	use bool
}

func (*bridgeGuard) EchoDominated() bool              { return false }
func (g *bridgeGuard) DecisionFrame() []int16         { return g.sig }
func (g *bridgeGuard) OnsetFrame() ([]int16, bool)    { return g.sig, g.use }
func (g *bridgeGuard) setFrame(sig []int16, use bool) { g.sig, g.use = sig, use }

// A run of speech frames the canceller let through survives one frame its
// suppressor held down: "S-SS" starts an utterance whose first frames are
// the pre-roll and the whole run, the held-down frame included. It does
// not survive two such frames, nor a second gap, and nothing is bridged in
// a run the canceller reduced (use false: what a residual burst of the
// robot's own voice is). With the energy VAD, auto's choice with a
// canceller (the spectral detector's own smoothing already carries a run
// over such a frame).
func TestVADRunBridgesOneFrameHeldDown(t *testing.T) {
	cases := []struct {
		pattern string // S: a speech frame, -: one held down
		use     bool
		want    int // utterances
	}{
		{"SSS", false, 1},
		{"SSS", true, 1},
		{"S-SS", true, 1},
		{"SS-S", true, 1},
		{"S-SS", false, 0},
		{"S--SS", true, 0},
		{"S-S-S", true, 0},
		{"S-S", true, 0},
	}
	for _, c := range cases {
		sink := &collector{}
		cfg := Config{Mode: ModeVAD, VAD: VADConfig{Detector: vad.KindEnergy, PreRollMS: 20}}
		p, err := NewPump(cfg, &failing{}, sink, clock.NewFake(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := &bridgeGuard{}
		p.SetOnsetGuard(g)
		const lead = 60
		frames := lead + len(c.pattern) + 40
		for i := range frames {
			cur := &p.ring[p.head]
			copy(cur.samples, quietFrame)
			cur.samples[0] = int16(i) // which frame was sent
			g.setFrame(quietFrame, c.use)
			if k := i - lead; k >= 0 && k < len(c.pattern) && c.pattern[k] == 'S' {
				g.setFrame(loudFrame, c.use)
			}
			p.process(cur)
		}
		utts := sink.utterances()
		if len(utts) != c.want {
			t.Errorf("%q use=%v: %d utterances, want %d", c.pattern, c.use, len(utts), c.want)
			continue
		}
		if c.want == 1 {
			// The utterance starts with the one pre-roll frame, then the
			// run.
			if first := int(utts[0][0].Samples[0]); first != lead-1 {
				t.Errorf("%q: utterance starts at frame %d, want %d (the pre-roll frame before the run)", c.pattern, first, lead-1)
			}
		}
	}
}
