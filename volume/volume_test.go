package volume

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

const rate = 24000

// recSink records everything written.
type recSink struct {
	ch  int
	out []int16
}

func (r *recSink) Format() hw.AudioFormat { return hw.AudioFormat{SampleRate: rate, Channels: r.ch} }
func (r *recSink) Close() error           { return nil }
func (r *recSink) Write(p []int16) error {
	r.out = append(r.out, p...)
	return nil
}

func sine(n, from int, amp float64) []int16 {
	p := make([]int16, n)
	for i := range p {
		p[i] = int16(amp * math.Sin(2*math.Pi*440*float64(from+i)/rate))
	}
	return p
}

func newSink(t *testing.T, db float64, ch int) (*Sink, *recSink) {
	t.Helper()
	rec := &recSink{ch: ch}
	s, err := New(rec, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, rec
}

func TestUnityPassesTheVoiceUnchanged(t *testing.T) {
	s, rec := newSink(t, 0, 1)
	in := sine(2400, 0, 20000)
	if err := s.Write(in); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if rec.out[i] != in[i] {
			t.Fatalf("sample %d: %d, want %d unchanged at 0 dB", i, rec.out[i], in[i])
		}
	}
}

func TestLevelIsTheGainInDB(t *testing.T) {
	for _, db := range []float64{-6, -20, -60} {
		s, rec := newSink(t, db, 1)
		in := make([]int16, 2400)
		for i := range in {
			in[i] = 20000
		}
		_ = s.Write(in)
		want := 20000 * math.Pow(10, db/20)
		if got := float64(rec.out[len(rec.out)-1]); math.Abs(got-want) > 1 {
			t.Errorf("%g dB: %v, want %.1f", db, got, want)
		}
	}
}

// A change of level ramps over RampMS: no step in the output larger than
// the signal's own, the new level reached within the ramp, and the level
// before it kept until the write after SetDB.
func TestChangeRampsWithoutAStep(t *testing.T) {
	s, rec := newSink(t, 0, 1)
	const period = rate / 100
	var maxIn float64
	pos := 0
	write := func() {
		p := sine(period, pos, 30000)
		for i := 1; i < len(p); i++ {
			maxIn = max(maxIn, math.Abs(float64(p[i])-float64(p[i-1])))
		}
		pos += period
		_ = s.Write(p)
	}
	write()
	if err := s.SetDB(-30); err != nil {
		t.Fatal(err)
	}
	start := len(rec.out)
	for range 5 {
		write()
	}
	if err := s.SetDB(0); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		write()
	}
	for i := 1; i < len(rec.out); i++ {
		if d := math.Abs(float64(rec.out[i]) - float64(rec.out[i-1])); d > maxIn+2 {
			t.Fatalf("sample %d: step %v, the sine's largest is %v", i, d, maxIn)
		}
	}
	ramp := rate * RampMS / 1000
	// After the ramp down, the level is -30 dB: the sine's peak 30000 at
	// about 949.
	var peak float64
	for _, v := range rec.out[start+ramp : start+5*period] {
		peak = max(peak, math.Abs(float64(v)))
	}
	if want := 30000 * math.Pow(10, -30.0/20); math.Abs(peak-want) > 0.02*want+1 {
		t.Errorf("after the ramp: peak %v, want %.0f", peak, want)
	}
	// Halfway through the ramp it is on its way.
	var mid float64
	for _, v := range rec.out[start+ramp/2-period/4 : start+ramp/2+period/4] {
		mid = max(mid, math.Abs(float64(v)))
	}
	if mid < 5000 || mid > 25000 {
		t.Errorf("halfway through the ramp: peak %v, want between the two levels", mid)
	}
	if g := s.Gain(); g != 1 {
		t.Errorf("back at 0 dB: gain %v, want 1", g)
	}
}

func TestStereoFramesShareTheGain(t *testing.T) {
	s, rec := newSink(t, 0, 2)
	_ = s.SetDB(-12)
	in := make([]int16, 2*rate/10)
	for i := range in {
		in[i] = 16000
	}
	_ = s.Write(in)
	for i := 0; i < len(rec.out); i += 2 {
		if rec.out[i] != rec.out[i+1] {
			t.Fatalf("frame %d: left %d, right %d", i/2, rec.out[i], rec.out[i+1])
		}
	}
}

func TestLevelOutOfRangeIsRefusedAndNamed(t *testing.T) {
	s, _ := newSink(t, -10, 1)
	for _, db := range []float64{1, 0.5, -60.5, -100, math.NaN(), math.Inf(1)} {
		err := s.SetDB(db)
		if !errors.Is(err, ErrLevel) {
			t.Errorf("SetDB(%g): %v, want ErrLevel", db, err)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprint(db)) || !strings.HasPrefix(err.Error(), "volume: ") {
			t.Errorf("SetDB(%g): %q does not name the value with the package prefix", db, err)
		}
	}
	if got := s.DB(); got != -10 {
		t.Errorf("after refused levels: %g dB, want -10 kept", got)
	}
	for _, db := range []float64{MinDB, MaxDB, -23.5} {
		if err := s.SetDB(db); err != nil {
			t.Errorf("SetDB(%g): %v", db, err)
		}
	}
	if _, err := New(&recSink{ch: 1}, 3, nil); !errors.Is(err, ErrLevel) {
		t.Errorf("New at +3 dB: %v, want ErrLevel", err)
	}
	if _, err := New(nil, 0, nil); err == nil {
		t.Error("New without a sink: no error")
	}
}

// SetDB from other goroutines while the player writes (run with -race).
func TestSetDBFromAnyGoroutine(t *testing.T) {
	s, _ := newSink(t, 0, 1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				_ = s.SetDB(-float64((g*7 + i) % 60))
			}
		}()
	}
	p := sine(240, 0, 10000)
	for range 500 {
		_ = s.Write(p)
	}
	wg.Wait()
	_ = s.DB()
}

func TestWriteDoesNotAllocate(t *testing.T) {
	s, _ := newSink(t, -6, 1)
	s.AudioSink = discard{}
	p := sine(480, 0, 10000)
	_ = s.Write(p)
	db := -6.0
	if n := testing.AllocsPerRun(200, func() {
		db = -24 - db // -18, -6, -18, ...: every Write ramps
		_ = s.SetDB(db)
		_ = s.Write(p)
	}); n != 0 {
		t.Errorf("Write allocates %v times per call", n)
	}
}

type discard struct{}

func (discard) Format() hw.AudioFormat { return hw.AudioFormat{SampleRate: rate, Channels: 1} }
func (discard) Close() error           { return nil }
func (discard) Write([]int16) error    { return nil }

func TestLevelGauge(t *testing.T) {
	reg := metrics.NewRegistry()
	s, err := New(&recSink{ch: 1}, -6, reg)
	if err != nil {
		t.Fatal(err)
	}
	g := reg.Gauge(MetricLevel, "")
	if g.Value() != -6 {
		t.Errorf("gauge %d, want -6", g.Value())
	}
	_ = s.SetDB(-20)
	if g.Value() != -20 {
		t.Errorf("gauge %d after SetDB(-20), want -20", g.Value())
	}
}

func ExampleSink() {
	rec := &recSink{ch: 1}
	s, _ := New(rec, 0, nil) // above the echo canceller's reference tap, in the agent
	_ = s.SetDB(-6)          // a skill, any goroutine: "speak more quietly"
	block := make([]int16, rate/10)
	for i := range block {
		block[i] = 10000
	}
	_ = s.Write(block) // the player: ramps over 20 ms, then -6 dB
	fmt.Println(rec.out[len(rec.out)-1])
	// Output: 5012
}
