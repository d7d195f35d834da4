package duplex

import (
	"time"

	"github.com/robot-agent/robot-agent/warmup"
)

// StartupNoise returns the agent's built-in start-up sound
// (duplex.startup_sound: noise, package warmup) at FarRate: d of pink noise
// at rmsDBFS with 20 ms fades, for Scenario.Prelude.
func StartupNoise(d time.Duration, rmsDBFS float64, seed uint64) []int16 {
	return warmup.Noise(d, FarRate, rmsDBFS, seed)
}

// preludeGate holds the pump's utterances while the start-up sound plays
// and until the first reply starts (LeadMS after it), as the agent holds
// the mic while it plays one (warmup.Sink). Gated is called from the
// pump's Run goroutine, which also drives src's Read.
type preludeGate struct {
	src   *benchSource
	until int // mic samples
}

func (g preludeGate) Gated() bool { return g.src.pos < g.until }
