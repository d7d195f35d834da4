package jittertrace

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/jitter"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
)

// Held-out arrival models: traces of a different shape from the shipped
// kinds (other delay distributions, frame sizes and block patterns), used
// to check that the adaptive player's mechanisms were not fitted to the
// shipped generators. Nothing in playback or jitter was tuned on them.
var holdoutKinds = []string{"pareto", "walk40", "cell", "varchunk"}

// holdout generates a 10-minute held-out trace.
//
//   - pareto: 20 ms frames, 25 ms + Pareto(xm 2 ms, alpha 1.8) delay
//     (heavy tail, no link blocks).
//   - walk40: 40 ms frames; a queueing delay that random-walks (±3 ms a
//     frame) between 0 and 120 ms, + exp(3 ms); every exp(20 s) a block of
//     50..600 ms.
//   - cell: 20 ms frames, 60 ms + exp(20 ms); every exp(4 s) a block of
//     exp(120 ms) (frequent short blocks).
//   - varchunk: chunks of 10..60 ms of audio (a TTS engine that sends
//     what it has), 5 ms + exp(8 ms), 3 % of chunks +30..120 ms.
func holdout(kind string, seed uint64) []Frame {
	rng := rand.New(rand.NewPCG(seed, 0x401d0))
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	exp := func(mean float64) float64 { return rng.ExpFloat64() * mean }
	total := 10 * time.Minute
	var out []Frame
	var sent, prev, blockFrom, blockTo time.Duration
	nextBlock := time.Duration(-1)
	walk := 30.0
	newBlock := func(every float64, length func() float64) {
		if nextBlock < 0 {
			nextBlock = ms(exp(every))
		}
		for sent >= nextBlock {
			blockFrom, blockTo = nextBlock, nextBlock+ms(length())
			nextBlock = blockTo + ms(exp(every))
		}
	}
	for sent < total {
		frameMS := 20
		var d float64
		switch kind {
		case "pareto":
			d = 25 + 2/math.Pow(1-rng.Float64(), 1/1.8)
			d = min(d, 1000)
		case "walk40":
			frameMS = 40
			walk = min(120, max(0, walk+rng.NormFloat64()*3))
			d = walk + exp(3)
			newBlock(20000, func() float64 { return 50 + 550*rng.Float64() })
		case "cell":
			d = 60 + exp(20)
			newBlock(4000, func() float64 { return exp(120) })
		case "varchunk":
			frameMS = 10 + rng.IntN(51)
			d = 5 + exp(8)
			if rng.Float64() < 0.03 {
				d += 30 + 90*rng.Float64()
			}
		default:
			panic("unknown holdout kind " + kind)
		}
		frame := time.Duration(frameMS) * time.Millisecond
		at := sent + frame + ms(d) // a frame leaves once its audio exists
		if at >= blockFrom && at < blockTo {
			at = blockTo + ms(exp(1))
		}
		at = max(at, prev)
		prev = at
		out = append(out, Frame{Arrival: at, Samples: frameMS * SampleRate / 1000})
		sent += frame
	}
	return out
}

var tune = flag.Bool("tune", false, "print the adaptive player against the oracle on shipped and held-out traces")
var tuneFrom = flag.Int("from", 1, "first seed for -tune")
var tuneHoldout = flag.Bool("holdout", false, "with -tune: the held-out kinds instead of the shipped ones")
var tuneQ = flag.Float64("q", 0, "with -tune: jitter quantile (0: default)")
var tuneFF = flag.Float64("ff", 0, "with -tune: jitter forget factor (0: default)")
var tuneExpand = flag.Int("expand", 0, "with -tune: ExpandPct (0: default)")
var tuneCatchUp = flag.Int("catchup", 0, "with -tune: CatchUpPct (0: default)")
var tuneBudget = flag.Float64("budget", 0, "with -tune: ConcealBudget (0: default)")
var tuneMinD = flag.Int("mindelay", 0, "with -tune: MinDelayMS (0: default)")
var tuneMaxD = flag.Int("maxdelay", 0, "with -tune: MaxDelayMS (0: default)")

// TestTune replays the adaptive player (default config) over seeds
// -from..-from+seeds-1 of every shipped 1x kind (or, with -holdout, the
// held-out kinds) and prints one line per trace and a worst case per kind.
func TestTune(t *testing.T) {
	if !*tune {
		t.Skip("go test ./jittertrace -run Tune -tune -seeds=8 [-holdout]")
	}
	kinds := []string{"ethernet", "wifi", "busywifi", "lte", "stall2s"}
	if *tuneHoldout {
		kinds = holdoutKinds
	}
	if *compareKinds != "" {
		kinds = splitComma(*compareKinds)
	}
	var rows []string
	for _, k := range kinds {
		worstC, worstR, worstG := 0.0, 0.0, time.Duration(math.MinInt64)
		for seed := uint64(*tuneFrom); seed < uint64(*tuneFrom+*compareSeeds); seed++ {
			var fr []Frame
			if *tuneHoldout {
				fr = holdout(k, seed)
			} else {
				var err error
				if fr, err = Generate(GenConfig{Kind: k, Seed: seed}); err != nil {
					t.Fatal(err)
				}
			}
			od, oracle, err := Oracle(fr, 1, Options{})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := NewPlayerPlayout(playback.Config{ExpandPct: *tuneExpand, CatchUpPct: *tuneCatchUp, ConcealBudget: *tuneBudget,
				MinDelayMS: *tuneMinD, MaxDelayMS: *tuneMaxD,
				Jitter: jitter.Config{Quantile: *tuneQ, ForgetFactor: *tuneFF}})
			if err != nil {
				t.Fatal(err)
			}
			var po Playout = pl
			if *tuneDiag && seed == uint64(*tuneFrom) {
				reg := metrics.NewRegistry()
				p, err := playback.New(pl.P.Config(), pl.clk, reg, nil)
				if err != nil {
					t.Fatal(err)
				}
				pl.P = p
				po = &diagPlayout{PlayerPlayout: pl, reg: reg}
			}
			r, err := Replay(fr, po, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ratio := float64(r.P95) / float64(max(oracle.P95, time.Millisecond))
			worstC, worstR, worstG = max(worstC, r.ConcealedPct), max(worstR, ratio), max(worstG, r.Growth)
			fmt.Printf("%-9s seed %2d: concealed %.2f%% p95 %4.0f ms (oracle %v: %4.0f ms) ratio %.2f growth %4.0f ms stretched %.2f%% underruns %d\n",
				k, seed, r.ConcealedPct, ms(r.P95), od, ms(oracle.P95), ratio, ms(r.Growth), r.StretchedPct, r.Underruns)
		}
		rows = append(rows, fmt.Sprintf("%-9s worst: concealed %.2f%% ratio %.2f growth %.0f ms", k, worstC, worstR, ms(worstG)))
	}
	fmt.Println(strings.Join(rows, "\n"))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

var tuneDiag = flag.Bool("diag", false, "with -tune: print every concealment episode of the first seed")

// diagPlayout wraps a PlayerPlayout and prints each concealment episode:
// when it started, how long, the target and the buffer before it.
type diagPlayout struct {
	*PlayerPlayout
	reg       *metrics.Registry
	last      Counters
	startedAt time.Duration
	prevDepth int
	acc       int64
	in        bool
}

func (d *diagPlayout) Fill(now time.Duration, dst []int16) {
	before := d.P.Depth()
	d.PlayerPlayout.Fill(now, dst)
	c := d.Counters()
	conc := c.Concealed - d.last.Concealed
	switch {
	case conc > 0 && !d.in:
		d.in, d.startedAt, d.acc, d.prevDepth = true, now, conc, before
	case conc > 0:
		d.acc += conc
	case d.in:
		d.in = false
		fmt.Printf("  conceal at %7.2f s: %4.0f ms (target %3d ms, depth before %3d ms, stretched so far %.1f s)\n",
			d.startedAt.Seconds(), float64(d.acc)/24, d.reg.Value("robot_agent_playback_target_delay_samples")/24,
			d.prevDepth/24, float64(c.Stretched)/24000)
	}
	d.last = c
}
