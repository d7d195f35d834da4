// Package field reports configuration problems the way users read them:
// one line per problem, naming the YAML path they typed, the value, what
// is wrong and how to fix it:
//
//	audio.frame_ms: "twenty": want a whole number (10, 20, 40 or 60; line 3)
//
// It is a leaf package so that the packages owning a configuration section
// (capture, cmd/robot-agent's camera and audio_devices sections, ...) and
// package config report problems in the same form.
package field

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every *Error (config.ErrInvalid is this value).
var ErrInvalid = errors.New("config: invalid")

// Error is one configuration problem.
type Error struct {
	// Path is the YAML path as users type it, e.g. "audio.vad.preroll_ms".
	Path string
	// Value is the offending value, formatted (strings quoted); empty when
	// the problem is not about one value (a missing key, a wrong shape).
	Value string
	// Problem says what is wrong; Hint how to fix it (may be empty).
	Problem, Hint string
	// Line is the YAML line, when known (0: unknown).
	Line int
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	b.WriteString(": ")
	if e.Value != "" {
		b.WriteString(e.Value)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	hint := e.Hint
	if e.Line > 0 {
		if hint != "" {
			hint += "; "
		}
		hint += fmt.Sprintf("line %d", e.Line)
	}
	if hint != "" {
		b.WriteString(" (")
		b.WriteString(hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap makes every Error match ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// Format renders a value for Error.Value: strings quoted, others with %v.
func Format(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

// New returns an Error for path with value v (formatted by Format).
func New(path string, v any, problem, hint string) *Error {
	return &Error{Path: path, Value: Format(v), Problem: problem, Hint: hint}
}

// List collects problems; its zero value is ready to use. Not safe for
// concurrent use.
type List []error

// Add records a problem with path and value v.
func (l *List) Add(path string, v any, problem, hint string) {
	*l = append(*l, New(path, v, problem, hint))
}

// Append records err's problems (nil is ignored).
func (l *List) Append(err error) {
	*l = append(*l, All(err)...)
}

// Err returns every problem joined (nil if none).
func (l List) Err() error { return errors.Join(l...) }

// All flattens err (a join of joins) into its problems.
func All(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	}
	return []error{err}
}

// Under returns err with every *Error's path placed below prefix
// ("audio" and "frame_ms" give "audio.frame_ms"); other errors are kept.
// The originals are not modified.
func Under(prefix string, err error) error {
	if err == nil || prefix == "" {
		return err
	}
	var out []error
	for _, e := range All(err) {
		var fe *Error
		if errors.As(e, &fe) {
			c := *fe
			c.Path = Join(prefix, c.Path)
			e = &c
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// Join joins two path parts with a dot ("" parts are skipped).
func Join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case strings.HasPrefix(b, "["):
		return a + b
	}
	return a + "." + b
}

// Suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo (at most a third of its length, and at
// least one edit allowed), else "".
func Suggest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := distance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, len(s)/3)
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// distance is the Levenshtein distance (adjacent transpositions count one,
// as in Damerau's restricted form).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
