package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/jittertrace"
	"github.com/robot-agent/robot-agent/playback"
)

const jitterReplayUsage = `Usage: robot-agent jitter-replay [flags] TRACE...

Replays TTS arrival traces through the real playback.Player (the jitter
buffer of 'robot-agent run') on a simulated clock and prints, per trace and
policy: added delay p50/p95/p99 (arrival of a frame to its first sample at
the device), concealment %, time-stretched %, latency growth (p50 of the
last minute minus p50 of the first), samples lost, underrun events and the
deepest buffer.

Trace format (docs/benchmarks.md): one line per TTS frame in send order,
"arrival_ms,samples" (24 kHz mono samples; arrival from any origin, e.g.
epoch milliseconds), '#' starts a comment (a line, or after a frame).
'robot-agent jitter-replay --generate KIND --seed N' writes a synthetic
trace to stdout instead (kinds: ethernet wifi busywifi lte stall2s burst4x
burst10x).

Flags:
`

// cmdJitterReplay is 'robot-agent jitter-replay'.
func cmdJitterReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jitter-replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, jitterReplayUsage); fs.PrintDefaults() }
	policies := fs.String("policy", "adaptive", "comma-separated: adaptive, stall (the old player), fixed:MS (fixed playout delay), oracle (smallest fixed delay with <= 1% concealment)")
	wavOut := fs.String("wav", "", "write what the first policy played for the first trace to this WAV file")
	audioIn := fs.String("audio", "", "24 kHz mono WAV to use as the stream content (looped; default: synthetic speech)")
	prebuffer := fs.Int("prebuffer-ms", 0, "player PrebufferMS (0: default)")
	minDelay := fs.Int("min-delay-ms", 0, "adaptive player: floor under its target delay, 0..2000 (playback.min_delay_ms; 0: default)")
	concealPct := fs.Float64("conceal-pct", 100*playback.DefaultConcealBudget, "adaptive player: share of the output it aims to conceal at most, percent, 0.01..10 (playback.conceal_pct)")
	gen := fs.String("generate", "", "write a synthetic trace of this kind to stdout and exit")
	seed := fs.Uint64("seed", 1, "seed for --generate")
	dur := fs.Duration("duration", 10*time.Minute, "stream length for --generate")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitConfig
	}
	// Every failure here is bad input (a trace, a WAV, a path): exit 2.
	fail := func(err error) int {
		fmt.Fprintln(stderr, "robot-agent jitter-replay:", err)
		return exitConfig
	}
	if *gen != "" {
		fr, err := jittertrace.Generate(jittertrace.GenConfig{Kind: *gen, Seed: *seed, Duration: *dur})
		if err != nil {
			return fail(err)
		}
		if err := jittertrace.Write(stdout, fr, fmt.Sprintf("robot-agent jitter-replay --generate %s --seed %d --duration %v", *gen, *seed, *dur)); err != nil {
			return fail(err)
		}
		return 0
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "robot-agent jitter-replay: no trace file given (see -h)")
		return exitConfig
	}
	if *minDelay < 0 || *minDelay > 2000 {
		fmt.Fprintf(stderr, "robot-agent jitter-replay: --min-delay-ms %d: want 0..2000\n", *minDelay)
		return exitConfig
	}
	if !(*concealPct >= 0.01 && *concealPct <= 10) {
		fmt.Fprintf(stderr, "robot-agent jitter-replay: --conceal-pct %g: want 0.01..10\n", *concealPct)
		return exitConfig
	}
	pols, err := parsePolicies(*policies, playback.Config{PrebufferMS: *prebuffer, MinDelayMS: *minDelay, ConcealBudget: *concealPct / 100})
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent jitter-replay:", err)
		return exitConfig
	}
	opt := jittertrace.Options{}
	if *audioIn != "" {
		a, err := readTTSWAV(*audioIn)
		if err != nil {
			return fail(err)
		}
		opt.Audio = a
	}
	traces := make([][]jittertrace.Frame, fs.NArg())
	for i, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return fail(err)
		}
		traces[i], err = jittertrace.Parse(f, name)
		f.Close()
		if err != nil {
			return fail(err)
		}
	}
	for i, fr := range traces {
		for j, pol := range pols {
			o := opt
			var w *wav.Writer
			var wf *os.File
			if *wavOut != "" && i == 0 && j == 0 {
				if wf, err = os.Create(*wavOut); err != nil {
					return fail(err)
				}
				if w, err = wav.NewWriter(wf, jittertrace.SampleRate, 1); err != nil {
					wf.Close()
					return fail(err)
				}
				o.Out = w.Write
			}
			pl, label, err := pol(fr)
			if err != nil {
				return fail(err)
			}
			r, err := jittertrace.Replay(fr, pl, o)
			if w != nil {
				if cerr := w.Close(); err == nil {
					err = cerr
				}
				if cerr := wf.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", fs.Arg(i), label, r)
		}
	}
	if kb := peakRSSKiB(); kb > 0 {
		fmt.Fprintf(stdout, "# peak RSS of this process %.1f MiB\n", float64(kb)/1024)
	}
	return 0
}

// peakRSSKiB is the process's peak resident set (VmHWM), 0 if unknown.
func peakRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	return 0
}

type replayPolicy func([]jittertrace.Frame) (jittertrace.Playout, string, error)

// parsePolicies parses --policy; the players (adaptive, stall) take base
// with their Policy set.
func parsePolicies(s string, base playback.Config) ([]replayPolicy, error) {
	var out []replayPolicy
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "adaptive" || name == "stall":
			pol := playback.PolicyAdaptive
			if name == "stall" {
				pol = playback.PolicyStall
			}
			out = append(out, func([]jittertrace.Frame) (jittertrace.Playout, string, error) {
				c := base
				c.Policy = pol
				p, err := jittertrace.NewPlayerPlayout(c)
				return p, name, err
			})
		case strings.HasPrefix(name, "fixed:"):
			var ms int
			if _, err := fmt.Sscanf(name, "fixed:%d", &ms); err != nil || ms < 0 || ms > 60000 {
				return nil, fmt.Errorf("--policy %q: want fixed:MS with MS in [0, 60000]", name)
			}
			out = append(out, func([]jittertrace.Frame) (jittertrace.Playout, string, error) {
				return &jittertrace.Fixed{Delay: time.Duration(ms) * time.Millisecond}, name, nil
			})
		case name == "oracle":
			out = append(out, func(fr []jittertrace.Frame) (jittertrace.Playout, string, error) {
				d, _, err := jittertrace.Oracle(fr, 1, jittertrace.Options{})
				return &jittertrace.Fixed{Delay: d}, fmt.Sprintf("oracle(%v)", d), err
			})
		default:
			return nil, fmt.Errorf("--policy: unknown policy %q (want adaptive, stall, fixed:MS or oracle)", name)
		}
	}
	return out, nil
}

// readTTSWAV reads a 24 kHz mono WAV file.
func readTTSWAV(path string) ([]int16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := wav.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.SampleRate() != jittertrace.SampleRate || r.Channels() != 1 {
		return nil, fmt.Errorf("%s: is %d Hz x %d ch, want 24000 Hz mono", path, r.SampleRate(), r.Channels())
	}
	var out []int16
	buf := make([]int16, 4096)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no audio", path)
	}
	return out, nil
}
