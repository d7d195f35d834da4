package metrics

import (
	"slices"
	"strings"
	"sync"
	"testing"
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
