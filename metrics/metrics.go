// Package metrics holds the agent's counters and gauges and renders them in
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
	"sort"
	"sync"
	"sync/atomic"
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

type entry struct {
	name, help, kind string
	c                *Counter
	g                *Gauge
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
		if e.c != nil {
			out[n] = e.c.Value()
		} else {
			out[n] = e.g.Value()
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
	if e.c != nil {
		return e.c.Value()
	}
	return e.g.Value()
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
