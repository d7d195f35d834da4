package main

import (
	"math"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/playback"
)

// playerConfig maps the playback section, and the player accepts the
// defaults and the extremes config.Validate allows.
func TestPlayerConfig(t *testing.T) {
	def := config.Default().Playback
	for _, tc := range []struct {
		name       string
		mod        func(*config.Playback)
		minDelayMS int
		budget     float64
	}{
		{"defaults", func(*config.Playback) {}, 0, playback.DefaultConcealBudget},
		{"floor and budget", func(p *config.Playback) { p.MinDelayMS, p.ConcealPct = 150, 0.2 }, 150, 0.002},
		{"lowest", func(p *config.Playback) { p.MinDelayMS, p.ConcealPct = 0, 0.01 }, 0, 0.0001},
		{"highest", func(p *config.Playback) { p.MinDelayMS, p.ConcealPct = 2000, 10 }, 2000, 0.1},
	} {
		p := def
		tc.mod(&p)
		c := config.Default()
		c.Playback = p
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: config: %v", tc.name, err)
		}
		pc := playerConfig(p)
		if pc.MinDelayMS != tc.minDelayMS || math.Abs(pc.ConcealBudget-tc.budget) > 1e-12 {
			t.Errorf("%s: MinDelayMS %d, ConcealBudget %g; want %d, %g", tc.name, pc.MinDelayMS, pc.ConcealBudget, tc.minDelayMS, tc.budget)
		}
		if _, err := playback.New(pc, clock.NewFake(), nil, nil); err != nil {
			t.Fatalf("%s: player: %v", tc.name, err)
		}
	}
}
