// Package quantile tracks a running quantile of a stream of values (levels
// in dB, reductions) by fixed steps: a stochastic-approximation tracker
// that costs O(1) per value, allocates nothing and forgets old values by
// itself. The aec's adaptive thresholds and the reverb model's level use
// it.
package quantile

import "slices"

// MaxStart bounds NewStarted's start.
const MaxStart = 32

// maxCount caps the count of values pushed (N): it is only compared with
// small numbers, and must not wrap round on a 32-bit board after years of
// 20 ms values.
const maxCount = 1 << 30

// Step tracks a running q-quantile: it starts at the first value (or,
// made by NewStarted, at the q-quantile of its first values), then moves
// up by 2q·step on a value above it and down by 2(1−q)·step on one below
// (q = 1/2: a running median moving step towards each new value).
//
// Not safe for concurrent use; the zero value is not usable (New).
type Step struct {
	v, up, down, q float64
	n              int // values pushed, up to maxCount
	start          int // values the start is the quantile of (0: the first alone)
	first          [MaxStart]float64
}

// New returns a tracker of the q-quantile moving by step, starting at the
// first value.
func New(q, step float64) Step {
	return Step{up: 2 * q * step, down: 2 * (1 - q) * step, q: q}
}

// NewStarted is New starting at the q-quantile of the first start values
// (at most MaxStart): one odd first value does not set where the tracker
// starts, from which fixed steps take seconds to move it.
func NewStarted(q, step float64, start int) Step {
	m := New(q, step)
	m.start = min(max(start, 0), MaxStart)
	return m
}

// Push adds a value.
func (m *Step) Push(x float64) {
	switch {
	case m.n < m.start:
		m.first[m.n] = x
		if m.n == m.start-1 {
			f := m.first[:m.start]
			slices.Sort(f)
			m.v = f[int(m.q*float64(m.start-1)+0.5)]
		}
	case m.n == 0:
		m.v = x
	case x > m.v:
		m.v += m.up
	case x < m.v:
		m.v -= m.down
	}
	m.n = min(m.n+1, maxCount)
}

// Value is the tracked quantile (0 before Ready).
func (m *Step) Value() float64 { return m.v }

// Ready reports whether the tracker has started.
func (m *Step) Ready() bool { return m.n >= max(m.start, 1) }

// N is the number of values pushed (saturating at 2^30).
func (m *Step) N() int { return m.n }

// Cap lowers the tracked value to at most x (a restart from a known safe
// level; the tracker then moves on from there).
func (m *Step) Cap(x float64) { m.v = min(m.v, x) }
