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
// milliseconds from any origin (a decimal number, exponent allowed, such as
// milliseconds since the Unix epoch from a packet capture); the replay
// starts at the first frame's arrival, so only differences matter, and no
// frame may arrive more than 1e9 ms (11.6 days) after the first. samples is
// the number of 24 kHz mono samples in the frame (an integer in [1,
// 240000]). Blank lines and comments from a '#' to the end of the line
// (a whole line, or after a frame's fields) are ignored; spaces around the
// fields, CRLF line ends, a UTF-8 byte-order mark and one header
// line "arrival_ms,samples" before the first frame (as a CSV export writes
// it) are allowed. Frames are delivered in file order; a frame whose
// arrival is earlier than the previous frame's is delivered with the
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

// MaxSpanMS bounds how long after the first frame a frame may arrive.
const MaxSpanMS = 1e9

// Parse reads a trace. name is used in error messages, which name the line:
// "jittertrace: bad trace: NAME:LINE: ...". Arrivals are returned relative
// to the first frame's (which arrives at 0).
func Parse(r io.Reader, name string) ([]Frame, error) {
	var out []Frame
	var first float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		txt := sc.Text()
		if line == 1 {
			txt = strings.TrimPrefix(txt, "\uFEFF")
		}
		if i := strings.IndexByte(txt, '#'); i >= 0 {
			txt = txt[:i] // a comment line, or one after the fields
		}
		txt = strings.TrimSpace(txt)
		if txt == "" {
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
		if len(out) == 0 && strings.EqualFold(a, "arrival_ms") && strings.EqualFold(b, "samples") {
			continue // a CSV header
		}
		ms, err := strconv.ParseFloat(a, 64)
		if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) {
			return nil, bad("arrival_ms %q is not a number", clip(a))
		}
		if len(out) == 0 {
			first = ms
		}
		if rel := ms - first; rel > MaxSpanMS || rel < -MaxSpanMS {
			return nil, bad("arrival_ms %s is %.0f ms from the first frame's %s; at most 1e9 ms apart", a, rel, strconv.FormatFloat(first, 'f', -1, 64))
		}
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > MaxFrameSamples {
			return nil, bad("samples %q is not an integer in [1, %d]", clip(b), MaxFrameSamples)
		}
		out = append(out, Frame{Arrival: time.Duration((ms - first) * float64(time.Millisecond)), Samples: n})
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
