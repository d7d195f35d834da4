// Package metrics holds the agent's counters, gauges and histograms and renders them in
// the Prometheus text exposition format.
//
// Counters and gauges are single atomics: Add/Set/Value never lock or
// allocate and may be used on the audio hot path. Registration takes a lock
// and is meant for start-up.
//
// # Concurrency
//
// All methods are safe for concurrent use.
package metrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Counter is a monotonically increasing count.
type Counter struct {
	v atomic.Int64
}

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n (n must be >= 0).
func (c *Counter) Add(n int64) { c.v.Add(n) }

// Value returns the current count.
func (c *Counter) Value() int64 { return c.v.Load() }

// Gauge is a value that goes up and down.
type Gauge struct {
	v atomic.Int64
}

// Set stores v.
func (g *Gauge) Set(v int64) { g.v.Store(v) }

// Add adds d.
func (g *Gauge) Add(d int64) { g.v.Add(d) }

// Value returns the current value.
func (g *Gauge) Value() int64 { return g.v.Load() }

// Histogram counts observations into fixed cumulative buckets (Prometheus
// histogram semantics). Observe is lock-free and allocation-free: a linear
// scan of the bounds and three atomic adds, fit for the audio hot path.
type Histogram struct {
	bounds []float64      // upper bounds, increasing; +Inf implied
	counts []atomic.Int64 // len(bounds)+1, non-cumulative
	sum    atomic.Int64   // sum of observations in nanounits (value*1e9)
	n      atomic.Int64
}

// Observe records v (in the histogram's unit, usually seconds).
func (h *Histogram) Observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(v * 1e9))
	h.n.Add(1)
}

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Count returns how many observations were made.
func (h *Histogram) Count() int64 { return h.n.Load() }

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return float64(h.sum.Load()) / 1e9 }

// Buckets returns the upper bounds and the cumulative count at each (the
// last entry is +Inf and equals Count, give or take concurrent Observes).
func (h *Histogram) Buckets() (bounds []float64, cumulative []int64) {
	bounds = append(append([]float64(nil), h.bounds...), math.Inf(1))
	cumulative = make([]int64, len(h.counts))
	var acc int64
	for i := range h.counts {
		acc += h.counts[i].Load()
		cumulative[i] = acc
	}
	return bounds, cumulative
}

// LatencyBuckets are bounds in seconds from 100 µs to 10 s, for latency
// histograms.
var LatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type entry struct {
	name, help, kind string
	c                *Counter
	g                *Gauge
	h                *Histogram
}

// Registry is a named set of counters and gauges. The zero value is ready.
type Registry struct {
	mu      sync.Mutex
	entries map[string]*entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Counter returns the counter called name, creating it on first use.
// Names use Prometheus conventions (robot_agent_..._total).
func (r *Registry) Counter(name, help string) *Counter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[name]; ok && e.c != nil {
		return e.c
	}
	e := &entry{name: name, help: help, kind: "counter", c: new(Counter)}
	r.put(e)
	return e.c
}

// Gauge returns the gauge called name, creating it on first use.
func (r *Registry) Gauge(name, help string) *Gauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[name]; ok && e.g != nil {
		return e.g
	}
	e := &entry{name: name, help: help, kind: "gauge", g: new(Gauge)}
	r.put(e)
	return e.g
}

// Histogram returns the histogram called name, creating it on first use with
// the given upper bounds (increasing; nil means LatencyBuckets).
func (r *Registry) Histogram(name, help string, bounds []float64) *Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[name]; ok && e.h != nil {
		return e.h
	}
	if bounds == nil {
		bounds = LatencyBuckets
	}
	h := &Histogram{bounds: append([]float64(nil), bounds...), counts: make([]atomic.Int64, len(bounds)+1)}
	r.put(&entry{name: name, help: help, kind: "histogram", h: h})
	return h
}

func (r *Registry) put(e *entry) {
	if r.entries == nil {
		r.entries = make(map[string]*entry)
	}
	r.entries[e.name] = e
}

// Snapshot returns the current value of every metric by name.
func (r *Registry) Snapshot() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.entries))
	for n, e := range r.entries {
		switch {
		case e.c != nil:
			out[n] = e.c.Value()
		case e.g != nil:
			out[n] = e.g.Value()
		default:
			out[n+"_count"] = e.h.Count()
		}
	}
	return out
}

// Value returns the value of the named metric, or 0 if it does not exist.
func (r *Registry) Value(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	if !ok {
		return 0
	}
	switch {
	case e.c != nil:
		return e.c.Value()
	case e.g != nil:
		return e.g.Value()
	default:
		return e.h.Count()
	}
}

// WritePrometheus writes all metrics, sorted by name, in the Prometheus text
// format.
func (r *Registry) WritePrometheus(w io.Writer) error {
	r.mu.Lock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	es := make([]*entry, len(names))
	for i, n := range names {
		es[i] = r.entries[n]
	}
	r.mu.Unlock()
	for _, e := range es {
		if e.h != nil {
			if err := writeHistogram(w, e); err != nil {
				return err
			}
			continue
		}
		v := int64(0)
		if e.c != nil {
			v = e.c.Value()
		} else {
			v = e.g.Value()
		}
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", e.name, e.help, e.name, e.kind, e.name, v); err != nil {
			return err
		}
	}
	return nil
}

func writeHistogram(w io.Writer, e *entry) error {
	if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", e.name, e.help, e.name); err != nil {
		return err
	}
	bounds, cum := e.h.Buckets()
	for i, b := range bounds {
		le := "+Inf"
		if !math.IsInf(b, 1) {
			le = strconv.FormatFloat(b, 'g', -1, 64)
		}
		if _, err := fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", e.name, le, cum[i]); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s_sum %s\n%s_count %d\n", e.name, strconv.FormatFloat(e.h.Sum(), 'g', -1, 64), e.name, cum[len(cum)-1])
	return err
}
