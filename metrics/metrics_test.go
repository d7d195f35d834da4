package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRegistryCountersGaugesAndText(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("robot_agent_b_total", "B things.")
	if r.Counter("robot_agent_b_total", "again") != c {
		t.Fatal("second Counter call returned a new counter")
	}
	g := r.Gauge("robot_agent_a", "A level.")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				c.Inc()
			}
		}()
	}
	wg.Wait()
	g.Set(5)
	g.Add(-2)
	if c.Value() != 8000 || g.Value() != 3 || r.Value("robot_agent_b_total") != 8000 || r.Value("nope") != 0 {
		t.Fatalf("values: counter %d gauge %d", c.Value(), g.Value())
	}
	var b strings.Builder
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	want := "# HELP robot_agent_a A level.\n# TYPE robot_agent_a gauge\nrobot_agent_a 3\n" +
		"# HELP robot_agent_b_total B things.\n# TYPE robot_agent_b_total counter\nrobot_agent_b_total 8000\n"
	if b.String() != want {
		t.Fatalf("exposition:\n%s\nwant:\n%s", b.String(), want)
	}
	if s := r.Snapshot(); len(s) != 2 || s["robot_agent_a"] != 3 {
		t.Fatalf("snapshot %v", s)
	}
}

func TestCounterIncDoesNotAllocate(t *testing.T) {
	c := NewRegistry().Counter("x", "")
	if n := testing.AllocsPerRun(100, c.Inc); n != 0 {
		t.Fatalf("Inc allocates %v", n)
	}
}

func TestHistogramBucketsAndText(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("robot_agent_x_seconds", "x", []float64{0.001, 0.01})
	for _, v := range []float64{0.0005, 0.001, 0.002, 0.5} {
		h.Observe(v)
	}
	_, cum := h.Buckets()
	if want := []int64{2, 3, 4}; !slices.Equal(cum, want) {
		t.Fatalf("cumulative = %v, want %v", cum, want)
	}
	if h.Count() != 4 || r.Value("robot_agent_x_seconds") != 4 {
		t.Fatalf("count = %d", h.Count())
	}
	var b strings.Builder
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`robot_agent_x_seconds_bucket{le="0.001"} 2`, `robot_agent_x_seconds_bucket{le="+Inf"} 4`, "robot_agent_x_seconds_count 4", "# TYPE robot_agent_x_seconds histogram"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("missing %q in:\n%s", line, b.String())
		}
	}
	if a := testing.AllocsPerRun(100, func() { h.Observe(0.003) }); a != 0 {
		t.Errorf("Observe allocates %v", a)
	}
}

// The hot-path operations the audio lanes use must not allocate.
func TestHotPathDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	c, g, h := r.Counter("c_total", ""), r.Gauge("g", ""), r.Histogram("h_seconds", "", nil)
	for name, f := range map[string]func(){
		"Counter.Inc":               c.Inc,
		"Counter.Add":               func() { c.Add(3) },
		"Gauge.Set":                 func() { g.Set(7) },
		"Gauge.Add":                 func() { g.Add(-1) },
		"Histogram.Observe":         func() { h.Observe(0.02) },
		"Histogram.ObserveDuration": func() { h.ObserveDuration(3 * time.Millisecond) },
	} {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s allocates %v per call", name, n)
		}
	}
}

// Bad names, kind clashes and negative adds never panic; the metric still
// counts, and the refusal shows in robot_agent_metrics_rejected_total.
func TestRegistrationNeverPanics(t *testing.T) {
	r := NewRegistry()
	bad := r.Counter("", "") // no name: invalid in every naming scheme
	bad.Inc()
	if bad.Value() != 1 {
		t.Fatalf("unexported counter value %d", bad.Value())
	}
	r.Counter("robot_agent_x", "").Add(-5)
	g := r.Gauge("robot_agent_x", "") // same name, other kind
	g.Set(4)
	if g.Value() != 4 || r.Value("robot_agent_x") != 0 {
		t.Fatalf("gauge %d, registry keeps the counter: %d", g.Value(), r.Value("robot_agent_x"))
	}
	var b strings.Builder
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "robot_agent_metrics_rejected_total 2") {
		t.Fatalf("rejections not exported:\n%s", b.String())
	}
}

// Observe from several goroutines while the exposition is read (run with
// -race); every observation is accounted for in count, +Inf and sum.
func TestHistogramConcurrentObserveAndScrape(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("robot_agent_y_seconds", "y", []float64{0.01, 0.1})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5000; j++ {
				h.Observe(0.05)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; k < 20; k++ {
			var b strings.Builder
			_ = r.WritePrometheus(&b)
		}
	}()
	wg.Wait()
	<-done
	bounds, cum := h.Buckets()
	if h.Count() != 20000 || cum[0] != 0 || cum[1] != 20000 || cum[2] != 20000 || len(bounds) != 3 {
		t.Fatalf("count %d cumulative %v", h.Count(), cum)
	}
	if s := h.Sum(); s < 999.9 || s > 1000.1 {
		t.Fatalf("sum %v, want 1000", s)
	}
}

func TestHandlerServesTextAndRuntimeMetrics(t *testing.T) {
	r := NewRegistry()
	r.RegisterRuntime()
	r.Counter("robot_agent_z_total", "z").Add(2)
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"robot_agent_z_total 2", "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestZeroCounterAndGaugeWork(t *testing.T) {
	var c Counter
	c.Inc()
	c.Add(2)
	c.Add(-5)
	var g Gauge
	g.Set(7)
	g.Add(-2)
	if c.Value() != 3 || g.Value() != 5 {
		t.Fatalf("zero counter %d (want 3), zero gauge %d (want 5)", c.Value(), g.Value())
	}
}
