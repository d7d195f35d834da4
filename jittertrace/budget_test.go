package jittertrace

import (
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/playback"
)

// A lower ConcealBudget must buy lower concealment (at more delay) on a
// link that blocks, and the default must stay under 1 %: the budget is the
// knob the equal-concealment comparison of TestCompare turns.
func TestConcealBudgetOrdersConcealment(t *testing.T) {
	fr, err := Generate(GenConfig{Kind: "lte", Seed: 21, Duration: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var prev Result
	for i, b := range []float64{0, 0.003, 0.0005} { // 0: the default 0.9 %
		pl, err := NewPlayerPlayout(playback.Config{ConcealBudget: b})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Replay(fr, pl, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("budget %g: %v", b, r)
		if r.Lost != 0 {
			t.Errorf("budget %g: lost %d samples", b, r.Lost)
		}
		switch {
		case i == 0 && r.ConcealedPct > 1.5:
			t.Errorf("default budget: concealed %.2f%%", r.ConcealedPct)
		case i > 0 && !(r.ConcealedPct < prev.ConcealedPct && r.P95 > prev.P95):
			t.Errorf("budget %g: concealed %.2f%% at p95 %v, not below the previous budget's %.2f%% at %v",
				b, r.ConcealedPct, r.P95, prev.ConcealedPct, prev.P95)
		case i == 2 && r.ConcealedPct > 0.2:
			t.Errorf("budget 0.05%%: concealed %.2f%% (the tail bounds must follow the budget)", r.ConcealedPct)
		}
		prev = r
	}
}
