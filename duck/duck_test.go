package duck

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// recSink records everything written (into a preallocated slice).
type recSink struct {
	f   hw.AudioFormat
	out []int16
}

func (r *recSink) Format() hw.AudioFormat { return r.f }
func (r *recSink) Close() error           { return nil }
func (r *recSink) Write(p []int16) error {
	r.out = append(r.out, p...)
	return nil
}

const rate = 24000

// period is 10 ms at 24 kHz.
const period = rate / 100

type rig struct {
	t   *testing.T
	clk *clock.Fake
	rec *recSink
	s   *Sink
	reg *metrics.Registry
	in  []int16 // everything handed to the Sink
	pos int     // sine phase
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	clk := clock.NewFake()
	rec := &recSink{f: hw.AudioFormat{SampleRate: rate, Channels: 1}, out: make([]int16, 0, 60*rate)}
	reg := metrics.NewRegistry()
	s, err := New(rec, cfg, clk, reg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, clk: clk, rec: rec, s: s, reg: reg}
}

// play writes n periods of a 440 Hz sine at amplitude amp (0: silence),
// advancing the clock by each period.
func (r *rig) play(n int, amp float64) {
	r.t.Helper()
	buf := make([]int16, period)
	for range n {
		for i := range buf {
			buf[i] = int16(amp * math.Sin(2*math.Pi*440*float64(r.pos)/rate))
			r.pos++
		}
		r.in = append(r.in, buf...)
		if err := r.s.Write(buf); err != nil {
			r.t.Fatal(err)
		}
		r.clk.Advance(10 * time.Millisecond)
	}
}

// ratio is the output/input amplitude of the last period written.
func (r *rig) ratio() float64 {
	in, out := r.in[len(r.in)-period:], r.rec.out[len(r.rec.out)-period:]
	var ei, eo float64
	for i := range in {
		ei += float64(in[i]) * float64(in[i])
		eo += float64(out[i]) * float64(out[i])
	}
	if ei == 0 {
		return math.NaN()
	}
	return math.Sqrt(eo / ei)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestDuckAtOnceAndRestoreAfterHold(t *testing.T) {
	cfg := Config{DepthDB: 12, Hold: time.Second, Attack: 10 * time.Millisecond, Release: 100 * time.Millisecond}
	r := newRig(t, cfg)
	floor := math.Pow(10, -12.0/20)
	r.play(20, 10000)
	if !near(r.ratio(), 1, 1e-3) || r.s.Ducked() {
		t.Fatalf("before Duck: ratio %.3f ducked %v, want 1 and false", r.ratio(), r.s.Ducked())
	}
	r.s.Duck()
	// The period right after Duck ramps down within the 10 ms attack: its
	// last sample is already at the floor.
	r.play(1, 10000)
	if got := r.s.Gain(); !near(got, floor, 1e-4) {
		t.Fatalf("gain one period after Duck = %.4f, want the floor %.4f", got, floor)
	}
	if !r.s.Ducked() || r.reg.Value(MetricDucks) != 1 {
		t.Fatalf("Ducked %v, ducks %d: want true, 1", r.s.Ducked(), r.reg.Value(MetricDucks))
	}
	// Held for the hold time (1 s from Duck: writes up to 1190 ms).
	r.play(99, 10000)
	if !near(r.ratio(), floor, 1e-3) {
		t.Fatalf("during the hold: ratio %.4f, want %.4f", r.ratio(), floor)
	}
	// Then released over 100 ms (10 periods) back to unity.
	r.play(1, 10000)
	if r.reg.Value(MetricRestored) != 1 {
		t.Fatalf("restored = %d after the hold, want 1", r.reg.Value(MetricRestored))
	}
	r.play(10, 10000) // the 100 ms release ends with the 10th period after the hold
	if !near(r.ratio(), 1, 1e-3) || r.s.Gain() != 1 || r.s.Ducked() {
		t.Fatalf("after release: ratio %.4f gain %v ducked %v, want 1, 1, false", r.ratio(), r.s.Gain(), r.s.Ducked())
	}
}

func TestNoRestoreAfterInterrupt(t *testing.T) {
	cfg := Config{DepthDB: 20, Hold: time.Second}
	r := newRig(t, cfg)
	floor := math.Pow(10, -20.0/20)
	r.play(10, 8000)
	r.s.Duck() // at 100 ms: held until 1100 ms
	r.play(5, 8000)
	r.s.Interrupted() // at 150 ms: kept until silence (or 1150 ms)
	// The player keeps playing for a while: the duck is kept past the
	// hold of the Duck (writes up to 1110 ms).
	r.play(97, 8000)
	if !near(r.ratio(), floor, 1e-3) {
		t.Fatalf("after the interrupt, past the Duck's hold: ratio %.4f, want the floor %.4f", r.ratio(), floor)
	}
	if r.reg.Value(MetricRestored) != 0 || r.reg.Value(MetricInterrupted) != 1 {
		t.Fatalf("restored %d interrupted %d, want 0 and 1", r.reg.Value(MetricRestored), r.reg.Value(MetricInterrupted))
	}
	// The player falls silent: unity again, and the next reply starts at
	// full level with no ramp.
	r.play(3, 0)
	if r.s.Gain() != 1 || r.s.Ducked() {
		t.Fatalf("on silence after the interrupt: gain %v ducked %v, want 1, false", r.s.Gain(), r.s.Ducked())
	}
	r.play(2, 8000)
	if !near(r.ratio(), 1, 1e-3) {
		t.Fatalf("next reply: ratio %.4f, want 1", r.ratio())
	}
}

func TestInterruptThatDoesNotStopPlaybackRestoresAfterAHold(t *testing.T) {
	r := newRig(t, Config{Hold: 200 * time.Millisecond, Release: 10 * time.Millisecond})
	r.play(5, 8000)
	r.s.Duck()
	r.play(1, 8000)
	r.s.Interrupted()
	r.play(19, 8000) // still playing after the interrupt, within its hold
	if !r.s.Ducked() {
		t.Fatal("not ducked within the hold after the interrupt")
	}
	r.play(4, 8000)
	if r.s.Ducked() || !near(r.ratio(), 1, 1e-3) {
		t.Fatalf("a hold after an interrupt that did not stop playback: ducked %v ratio %.3f, want restored", r.s.Ducked(), r.ratio())
	}
}

func TestDuckWhileSilentIsIgnored(t *testing.T) {
	r := newRig(t, Config{PlayingWindow: 300 * time.Millisecond})
	r.s.Duck()
	r.play(5, 0)
	r.play(50, 0) // the robot stopped talking over 300 ms ago
	r.s.Duck()
	r.play(1, 0)
	r.play(3, 8000)
	if r.s.Ducked() || !near(r.ratio(), 1, 1e-3) || r.reg.Value(MetricDucks) != 0 || r.reg.Value(MetricIgnored) != 2 {
		t.Fatalf("ducked %v ratio %.3f ducks %d ignored %d: want no duck, 2 ignored",
			r.s.Ducked(), r.ratio(), r.reg.Value(MetricDucks), r.reg.Value(MetricIgnored))
	}
	// Within the playing window after a reply (its echo tail, a pause
	// between sentences) a Duck counts.
	r.play(10, 0)
	r.s.Duck()
	r.play(1, 0)
	r.play(2, 8000)
	if !r.s.Ducked() {
		t.Fatal("a Duck 100 ms after the robot last played was ignored")
	}
}

// TestRampHasNoDiscontinuity: across duck, hold, release, block boundaries
// and repeated ducks, no step of the output is larger than the largest
// step of the input (a click would be).
func TestRampHasNoDiscontinuity(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"deep fast", Config{DepthDB: 40, Attack: time.Millisecond, Release: time.Millisecond, Hold: 100 * time.Millisecond}},
		{"shallow slow", Config{DepthDB: 3, Attack: 300 * time.Millisecond, Release: time.Second, Hold: 200 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			r.play(10, 30000)
			for k := range 6 {
				r.s.Duck()
				r.play(3+7*k, 30000)
				if k == 3 {
					r.s.Interrupted()
				}
			}
			r.play(200, 30000)
			var maxIn, maxOut float64
			for i := 1; i < len(r.in); i++ {
				maxIn = max(maxIn, math.Abs(float64(r.in[i])-float64(r.in[i-1])))
				maxOut = max(maxOut, math.Abs(float64(r.rec.out[i])-float64(r.rec.out[i-1])))
			}
			// A gain step would add up to (1-floor)·peak ≈ 30000 to one
			// sample step; the ramp adds at most one sample's gain change
			// times the peak.
			cfg := r.s.Config()
			floor := math.Pow(10, -cfg.DepthDB/20)
			ramp := (1 - floor) / min(cfg.Attack.Seconds(), cfg.Release.Seconds()) / rate * 30000
			if maxOut > maxIn+ramp+2 {
				t.Fatalf("largest output step %.0f > largest input step %.0f + ramp %.0f: a click", maxOut, maxIn, ramp)
			}
			if r.reg.Value(MetricDucks) == 0 {
				t.Fatal("never ducked")
			}
		})
	}
}

func TestStereoFramesShareTheGain(t *testing.T) {
	clk := clock.NewFake()
	rec := &recSink{f: hw.AudioFormat{SampleRate: rate, Channels: 2}}
	s, err := New(rec, Config{Attack: 5 * time.Millisecond}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]int16, 2*period)
	for i := range buf {
		buf[i] = 1000
	}
	s.Write(buf)
	s.Duck()
	s.Write(buf)
	out := rec.out[len(buf):]
	for i := 0; i < len(out); i += 2 {
		if out[i] != out[i+1] {
			t.Fatalf("frame %d: channels %d and %d differ", i/2, out[i], out[i+1])
		}
	}
}

func TestWriteDoesNotAllocate(t *testing.T) {
	clk := clock.NewFake()
	s, err := New(discard{}, Config{Hold: 30 * time.Second}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]int16, period)
	for i := range buf {
		buf[i] = int16(i * 50)
	}
	s.Write(buf)
	s.Duck()
	s.Write(buf) // grows the buffer once
	if n := testing.AllocsPerRun(200, func() {
		s.Duck()
		s.Write(buf)
		clk.Advance(10 * time.Millisecond)
	}); n != 0 {
		t.Fatalf("Write while ducked: %v allocations, want 0", n)
	}
	s.Interrupted()
	s.Write(make([]int16, period)) // silence after the interrupt: unity
	if n := testing.AllocsPerRun(200, func() { s.Write(buf) }); n != 0 || s.Gain() != 1 {
		t.Fatalf("Write at unity: %v allocations, want 0", n)
	}
}

type discard struct{}

func (discard) Format() hw.AudioFormat { return hw.TTSFormat }
func (discard) Write([]int16) error    { return nil }
func (discard) Close() error           { return nil }

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want bool
	}{
		{Config{}, true},
		{Config{DepthDB: 6, Hold: 800 * time.Millisecond}, true},
		{Config{DepthDB: -3}, false},
		{Config{DepthDB: 61}, false},
		{Config{Hold: 10 * time.Millisecond}, false},
		{Config{Attack: 2 * time.Second}, false},
		{Config{Release: -time.Millisecond}, false},
		{Config{PlayingWindow: -time.Millisecond}, false},
	} {
		err := c.cfg.Validate()
		if (err == nil) != c.want {
			t.Errorf("%+v: Validate() = %v, want ok %v", c.cfg, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v does not wrap ErrConfig", c.cfg, err)
		}
	}
	if _, err := New(discard{}, Config{DepthDB: 100}, clock.NewFake(), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("New with a bad config: %v", err)
	}
}
