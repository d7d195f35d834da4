// Package jittertrace replays TTS arrival traces through playout policies
// on a simulated clock and measures what a listener would get: how long
// audio waited in the robot (added delay), how much was concealed, how much
// was time-stretched, how the delay drifts, and what was lost.
//
// # Trace format
//
// A trace is UTF-8 text, one line per TTS frame in the order the gateway
// sent them:
//
//	arrival_ms,samples
//
// arrival_ms is when the frame's last byte reached the robot, in
// milliseconds from any origin (a decimal number ≥ 0); samples is the
// number of 24 kHz mono samples in the frame (an integer in [1, 240000]).
// Blank lines and lines starting with '#' are ignored; spaces around the
// fields are allowed. Frames are delivered in file order; a frame whose
// arrival_ms is earlier than the previous frame's is delivered with the
// previous one (the WebSocket is in order).
package jittertrace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// SampleRate of trace frames (hw.TTSFormat).
const SampleRate = 24000

// MaxFrameSamples bounds one frame (10 s).
const MaxFrameSamples = 10 * SampleRate

// ErrTrace wraps every parse error.
var ErrTrace = errors.New("jittertrace: bad trace")

// Frame is one TTS frame of a trace.
type Frame struct {
	Arrival time.Duration
	Samples int
}

// Parse reads a trace. name is used in error messages, which name the line:
// "jittertrace: bad trace: NAME:LINE: ...".
func Parse(r io.Reader, name string) ([]Frame, error) {
	var out []Frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		txt := strings.TrimSpace(sc.Text())
		if txt == "" || txt[0] == '#' {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: %s:%d: "+format, append([]any{ErrTrace, name, line}, a...)...)
		}
		a, b, ok := strings.Cut(txt, ",")
		if !ok || strings.Contains(b, ",") {
			return nil, bad("want \"arrival_ms,samples\", got %q", clip(txt))
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		ms, err := strconv.ParseFloat(a, 64)
		if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms > 1e9 {
			return nil, bad("arrival_ms %q is not a number in [0, 1e9]", clip(a))
		}
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > MaxFrameSamples {
			return nil, bad("samples %q is not an integer in [1, %d]", clip(b), MaxFrameSamples)
		}
		out = append(out, Frame{Arrival: time.Duration(ms * float64(time.Millisecond)), Samples: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %w", ErrTrace, name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no frames", ErrTrace, name)
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Write writes frames in the trace format, after comment lines (each
// prefixed with "# ").
func Write(w io.Writer, frames []Frame, comments ...string) error {
	bw := bufio.NewWriter(w)
	for _, c := range comments {
		fmt.Fprintf(bw, "# %s\n", c)
	}
	for _, f := range frames {
		fmt.Fprintf(bw, "%.3f,%d\n", float64(f.Arrival)/float64(time.Millisecond), f.Samples)
	}
	return bw.Flush()
}
