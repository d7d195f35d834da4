// Package metrics holds the agent's counters, gauges and histograms and
// exposes them in the Prometheus formats. It is a thin layer over
// github.com/prometheus/client_golang that keeps the agent's small API
// (Registry.Counter/Gauge/Histogram, Value, Snapshot, WritePrometheus):
// the library does the atomics, bucket bookkeeping, exposition and content
// negotiation; this package keeps registration from ever panicking and
// makes a metric's current value easy to read for summaries and tests.
//
// Counter.Inc/Add, Gauge.Set/Add and Histogram.Observe never lock or
// allocate (client_golang's counters and gauges are atomics, its histogram
// a lock-free hot/cold pair of atomic bucket arrays), so they may be used on
// the audio hot path. Value, Snapshot, Buckets and WritePrometheus read
// through the library's Write/Gather and allocate: not for the hot path.
// Registration takes a lock and is meant for start-up.
//
// Every metric name is documented in docs/metrics.md; a test in
// cmd/robot-agent fails when the running agent registers one that is not.
//
// # Concurrency
//
// All methods are safe for concurrent use.
package metrics

import (
	"io"
	"math"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Counter is a monotonically increasing count. Get one from a Registry; a
// zero Counter (not registered anywhere) also works and counts locally.
type Counter struct {
	c prometheus.Counter
	v atomic.Int64 // the count of an unregistered (zero) Counter
}

// Inc adds one.
func (c *Counter) Inc() {
	if c.c == nil {
		c.v.Add(1)
		return
	}
	c.c.Inc()
}

// Add adds n. A negative n is ignored (a counter never goes down; the
// library would panic).
func (c *Counter) Add(n int64) {
	if n <= 0 {
		return
	}
	if c.c == nil {
		c.v.Add(n)
		return
	}
	c.c.Add(float64(n))
}

// Value returns the current count.
func (c *Counter) Value() int64 {
	if c.c == nil {
		return c.v.Load()
	}
	var m dto.Metric
	if c.c.Write(&m) != nil {
		return 0
	}
	return int64(m.GetCounter().GetValue())
}

// Gauge is a value that goes up and down. Get one from a Registry; a zero
// Gauge (not registered anywhere) also works locally.
type Gauge struct {
	g prometheus.Gauge
	v atomic.Int64 // the value of an unregistered (zero) Gauge
}

// Set stores v.
func (g *Gauge) Set(v int64) {
	if g.g == nil {
		g.v.Store(v)
		return
	}
	g.g.Set(float64(v))
}

// Add adds d.
func (g *Gauge) Add(d int64) {
	if g.g == nil {
		g.v.Add(d)
		return
	}
	g.g.Add(float64(d))
}

// Value returns the current value.
func (g *Gauge) Value() int64 {
	if g.g == nil {
		return g.v.Load()
	}
	var m dto.Metric
	if g.g.Write(&m) != nil {
		return 0
	}
	return int64(math.Round(m.GetGauge().GetValue()))
}

// Histogram counts observations into fixed cumulative buckets (Prometheus
// histogram semantics). Get one from a Registry.
type Histogram struct {
	h      prometheus.Histogram
	bounds []float64
}

// Observe records v (in the histogram's unit, usually seconds).
func (h *Histogram) Observe(v float64) { h.h.Observe(v) }

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.h.Observe(d.Seconds()) }

func (h *Histogram) read() *dto.Histogram {
	var m dto.Metric
	if h.h.Write(&m) != nil {
		return &dto.Histogram{}
	}
	return m.GetHistogram()
}

// Count returns how many observations were made.
func (h *Histogram) Count() int64 { return int64(h.read().GetSampleCount()) }

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return h.read().GetSampleSum() }

// Buckets returns the upper bounds and the cumulative count at each (the
// last entry is +Inf and equals Count).
func (h *Histogram) Buckets() (bounds []float64, cumulative []int64) {
	d := h.read()
	bounds = append(append([]float64(nil), h.bounds...), math.Inf(1))
	cumulative = make([]int64, len(bounds))
	for i, b := range d.GetBucket() {
		if i < len(h.bounds) {
			cumulative[i] = int64(b.GetCumulativeCount())
		}
	}
	cumulative[len(bounds)-1] = int64(d.GetSampleCount())
	return bounds, cumulative
}

// LatencyBuckets are bounds in seconds from 100 µs to 10 s, for latency
// histograms.
var LatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type entry struct {
	name string
	c    *Counter
	g    *Gauge
	h    *Histogram
}

// Registry is a named set of metrics. The zero value is ready.
type Registry struct {
	mu      sync.Mutex
	reg     *prometheus.Registry
	entries map[string]*entry
	// rejected counts metrics the library refused (bad name, name reused
	// with another kind): they work but are not exported.
	rejected prometheus.Counter
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// lazyInit creates the library registry. Call with r.mu held.
func (r *Registry) lazyInit() {
	if r.reg != nil {
		return
	}
	r.reg = prometheus.NewRegistry()
	r.entries = make(map[string]*entry)
	r.rejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "robot_agent_metrics_rejected_total",
		Help: "Metrics the registry refused to export (invalid name, or a name reused with another type); a bug.",
	})
	r.reg.MustRegister(r.rejected) // a fixed, valid name: cannot fail
}

// register adds c to the library registry. A refused collector still works
// as a standalone metric; it is counted in robot_agent_metrics_rejected_total.
// Call with r.mu held.
func (r *Registry) register(c prometheus.Collector) {
	if err := r.reg.Register(c); err != nil {
		r.rejected.Inc()
	}
}

// RegisterRuntime adds the Go runtime (go_*) and process (process_*)
// metrics. Call once at start-up.
func (r *Registry) RegisterRuntime() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lazyInit()
	r.register(collectors.NewGoCollector())
	r.register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Counter returns the counter called name, creating it on first use.
// Names use Prometheus conventions (robot_agent_..._total).
func (r *Registry) Counter(name, help string) *Counter {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lazyInit()
	if e, ok := r.entries[name]; ok && e.c != nil {
		return e.c
	}
	c := &Counter{c: prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})}
	r.put(name, &entry{name: name, c: c}, c.c)
	return c
}

// Gauge returns the gauge called name, creating it on first use.
func (r *Registry) Gauge(name, help string) *Gauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lazyInit()
	if e, ok := r.entries[name]; ok && e.g != nil {
		return e.g
	}
	g := &Gauge{g: prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})}
	r.put(name, &entry{name: name, g: g}, g.g)
	return g
}

// Histogram returns the histogram called name, creating it on first use with
// the given upper bounds (increasing; nil means LatencyBuckets).
func (r *Registry) Histogram(name, help string, bounds []float64) *Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lazyInit()
	if e, ok := r.entries[name]; ok && e.h != nil {
		return e.h
	}
	if bounds == nil {
		bounds = LatencyBuckets
	}
	bounds = append([]float64(nil), bounds...)
	if !sort.Float64sAreSorted(bounds) {
		sort.Float64s(bounds)
	}
	h := &Histogram{bounds: bounds, h: prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: bounds})}
	r.put(name, &entry{name: name, h: h}, h.h)
	return h
}

// put records e under name and registers col with the library. A name
// already taken by another kind keeps its first metric in the export; the
// new one works unexported (and is counted as rejected).
func (r *Registry) put(name string, e *entry, col prometheus.Collector) {
	if _, taken := r.entries[name]; taken {
		r.rejected.Inc()
		return
	}
	r.entries[name] = e
	r.register(col)
}

// Names returns the names of every metric registered through Counter, Gauge
// and Histogram, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Snapshot returns the current value of every metric by name (a histogram
// as name_count).
func (r *Registry) Snapshot() map[string]int64 {
	r.mu.Lock()
	es := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		es = append(es, e)
	}
	r.mu.Unlock()
	out := make(map[string]int64, len(es))
	for _, e := range es {
		switch {
		case e.c != nil:
			out[e.name] = e.c.Value()
		case e.g != nil:
			out[e.name] = e.g.Value()
		default:
			out[e.name+"_count"] = e.h.Count()
		}
	}
	return out
}

// Value returns the value of the named metric (a histogram's count), or 0
// if it does not exist.
func (r *Registry) Value(name string) int64 {
	r.mu.Lock()
	e, ok := r.entries[name]
	r.mu.Unlock()
	switch {
	case !ok:
		return 0
	case e.c != nil:
		return e.c.Value()
	case e.g != nil:
		return e.g.Value()
	default:
		return e.h.Count()
	}
}

// gatherer returns the library registry (created if needed).
func (r *Registry) gatherer() *prometheus.Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lazyInit()
	return r.reg
}

// WritePrometheus writes all metrics, sorted by name, in the Prometheus text
// format (version 0.0.4).
func (r *Registry) WritePrometheus(w io.Writer) error {
	mfs, err := r.gatherer().Gather()
	if err != nil && len(mfs) == 0 {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if mf.GetName() == "robot_agent_metrics_rejected_total" && mf.GetMetric()[0].GetCounter().GetValue() == 0 {
			continue // only shown when something went wrong
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the registry over HTTP (text or OpenMetrics by content
// negotiation, gzip when asked), as Prometheus scrapes it.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.gatherer(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
