package jittertrace

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/playback"
)

var compare = flag.Bool("compare", false, "run the policy comparison on generated traces (make bench)")
var compareSeeds = flag.Int("seeds", 3, "seeds per trace kind for -compare")
var compareKinds = flag.String("kinds", "", "comma-separated kinds for -compare (default all)")

func TestCompare(t *testing.T) {
	if !*compare {
		t.Skip("benchmark comparison: go test ./jittertrace -run Compare -compare (make bench)")
	}
	kinds := Kinds
	if *compareKinds != "" {
		kinds = splitComma(*compareKinds)
	}
	for _, k := range kinds {
		for seed := uint64(1); seed <= uint64(*compareSeeds); seed++ {
			fr, err := Generate(GenConfig{Kind: k, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range peers() {
				pl, err := pol.make(fr)
				if err != nil {
					t.Fatal(err)
				}
				r, err := Replay(fr, pl, Options{})
				if err != nil {
					t.Fatal(err)
				}
				fmt.Printf("%-9s seed %d %-9s %s\n", k, seed, pol.name, r)
			}
		}
	}
}

type peer struct {
	name string
	make func([]Frame) (Playout, error)
}

func peers() []peer {
	return []peer{
		{"adaptive", func([]Frame) (Playout, error) { return NewPlayerPlayout(playback.Config{}) }},
		{"stall", func([]Frame) (Playout, error) { return NewPlayerPlayout(playback.Config{Policy: playback.PolicyStall}) }},
		{"fixed200", func([]Frame) (Playout, error) { return &Fixed{Delay: 200 * time.Millisecond}, nil }},
		{"oracle", func(fr []Frame) (Playout, error) {
			d, _, err := Oracle(fr, 1, Options{})
			return &Fixed{Delay: d}, err
		}},
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
