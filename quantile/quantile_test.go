package quantile

import (
	"fmt"
	"math"
	"testing"
)

func TestStarted(t *testing.T) {
	m := NewStarted(0.5, 0.2, 5)
	for _, v := range []float64{-40, 20, 21, 19, 22} {
		if m.Ready() {
			t.Fatalf("ready after %d of 5 values", m.N())
		}
		m.Push(v)
	}
	if !m.Ready() || m.Value() != 20 {
		t.Fatalf("started at %.1f (ready %v), want the median 20", m.Value(), m.Ready())
	}
	m.Push(30)
	if math.Abs(m.Value()-20.2) > 1e-9 {
		t.Errorf("after a value above: %.2f, want 20.2", m.Value())
	}
	q := New(0.5, 0.2) // the first value alone
	q.Push(-40)
	if !q.Ready() || q.Value() != -40 {
		t.Errorf("unstarted tracker: %.1f (ready %v), want -40 at once", q.Value(), q.Ready())
	}
	p := NewStarted(0.1, 0.1, 11)
	for v := range 11 {
		p.Push(float64(10 - v))
	}
	if p.Value() != 1 {
		t.Errorf("10th percentile of 0..10 started at %.1f, want 1", p.Value())
	}
}

// The tracker follows a quantile with asymmetric steps and forgets: a
// stream that moves settles where q of its values lie below.
func TestTracksTheQuantile(t *testing.T) {
	m := New(0.1, 0.1)
	for i := range 20000 {
		m.Push(float64(i % 100)) // uniform 0..99: the 10th percentile is about 10
	}
	if v := m.Value(); v < 8 || v > 12 {
		t.Errorf("10th percentile of 0..99 tracked at %.1f, want 10 ± 2", v)
	}
	m.Cap(3)
	if m.Value() != 3 {
		t.Errorf("Cap(3): %.1f", m.Value())
	}
}

func TestCountSaturates(t *testing.T) {
	m := NewStarted(0.5, 0.1, 3)
	m.n = maxCount - 1
	m.Push(1)
	m.Push(1)
	if m.N() != maxCount || !m.Ready() {
		t.Errorf("count %d (ready %v) after the cap, want %d", m.N(), m.Ready(), maxCount)
	}
}

func TestPushAllocatesNothing(t *testing.T) {
	m := NewStarted(0.5, 0.1, MaxStart)
	x := 0.0
	if a := testing.AllocsPerRun(1000, func() { x++; m.Push(x) }); a != 0 {
		t.Errorf("%v allocations per Push", a)
	}
}

func ExampleNewStarted() {
	m := NewStarted(0.5, 0.2, 5)
	for _, v := range []float64{-46, 20, 21, 19, 22} { // one odd first value
		m.Push(v)
	}
	fmt.Printf("%.1f dB\n", m.Value())
	// Output: 20.0 dB
}
