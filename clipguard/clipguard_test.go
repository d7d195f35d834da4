package clipguard

import (
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// recSink records everything written.
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

// clips is a fake Counter (the mic side).
type clips struct{ n atomic.Int64 }

func (c *clips) EchoClips() int64 { return c.n.Load() }

const (
	rate   = 24000
	period = rate / 100 // 10 ms
)

type rig struct {
	t     *testing.T
	clk   *clock.Fake
	rec   *recSink
	clips *clips
	s     *Sink
	reg   *metrics.Registry
	pos   int
	buf   []int16
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	clk := clock.NewFake()
	rec := &recSink{f: hw.AudioFormat{SampleRate: rate, Channels: 1}, out: make([]int16, 0, 60*rate)}
	reg := metrics.NewRegistry()
	c := &clips{}
	s, err := New(rec, c, cfg, clk, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, clk: clk, rec: rec, clips: c, s: s, reg: reg, buf: make([]int16, period)}
}

// play writes n periods of a 440 Hz sine at amp (0: silence), advancing
// the clock by each period; clip(i) is added to the mic's clip count
// before period i.
func (r *rig) play(n int, amp float64, clip func(i int) int64) {
	r.t.Helper()
	for i := range n {
		if clip != nil {
			r.clips.n.Add(clip(i))
		}
		for k := range r.buf {
			r.buf[k] = int16(amp * math.Cos(2*math.Pi*440*float64(r.pos)/rate)) // steps come at a whole period: at the peak
			r.pos++
		}
		if err := r.s.Write(r.buf); err != nil {
			r.t.Fatal(err)
		}
		r.clk.Advance(10 * time.Millisecond)
	}
}

// levelDB is the gain of the last period written, from its peak.
func (r *rig) levelDB(amp float64) float64 {
	var pk int16
	for _, v := range r.rec.out[len(r.rec.out)-period:] {
		pk = max(pk, v, -v)
	}
	return 20 * math.Log10(float64(pk)/amp)
}

func every(step int) func(int) int64 {
	return func(i int) int64 {
		if i%step == 0 {
			return 1
		}
		return 0
	}
}

// Clips spread wider than Window, or fewer than Clips, leave the voice
// alone; Clips within Window lower it by StepDB, reached within Ramp.
func TestStepsDownOnRepeatedClips(t *testing.T) {
	const amp = 20000
	r := newRig(t, Config{})
	r.play(100, amp, nil)
	r.play(1600, amp, every(600)) // one clip every 6 s: never 3 within 5 s
	if b := r.s.BackoffDB(); b != 0 {
		t.Fatalf("clips 6 s apart lowered the voice by %v dB", b)
	}
	r.play(400, amp, every(150)) // every 1.5 s: the third within 5 s steps
	if b := r.s.BackoffDB(); b != 3 {
		t.Fatalf("after clips 1.5 s apart: lowered by %v dB, want 3", b)
	}
	if l := r.levelDB(amp); math.Abs(l+3) > 0.1 {
		t.Errorf("output at %.2f dB, want -3", l)
	}
	if n := r.reg.Value(MetricDown); n != 1 {
		t.Errorf("%s = %d, want 1", MetricDown, n)
	}
	if n := r.reg.Value(MetricBackoff); n != 3 {
		t.Errorf("%s = %d, want 3", MetricBackoff, n)
	}
	if n := r.reg.Value(MetricClips); n != r.clips.n.Load() {
		t.Errorf("%s = %d, the mic counted %d", MetricClips, n, r.clips.n.Load())
	}
}

// A burst of clips makes one step, not several: the clips of the Settle
// after a step are judged at the new level, from scratch.
func TestSettleAfterAStep(t *testing.T) {
	r := newRig(t, Config{})
	r.play(1, 20000, func(int) int64 { return 3 })
	if b := r.s.BackoffDB(); b != 3 {
		t.Fatalf("3 clips at once: lowered by %v dB, want 3", b)
	}
	r.play(99, 20000, func(int) int64 { return 2 }) // clipping on, within Settle
	if b := r.s.BackoffDB(); b != 3 {
		t.Fatalf("clips within the second after the step: lowered by %v dB, want still 3", b)
	}
	r.play(2, 20000, func(int) int64 { return 2 }) // after Settle: 3 more
	if b := r.s.BackoffDB(); b != 6 {
		t.Fatalf("clips after Settle: lowered by %v dB, want 6", b)
	}
}

// Clipping that never stops lowers the voice down to MaxDB and no further.
func TestStopsAtMaxDB(t *testing.T) {
	for _, max := range []float64{12, 5} {
		r := newRig(t, Config{MaxDB: max})
		r.play(3000, 20000, func(int) int64 { return 1 })
		want := math.Floor(max/DefaultStepDB) * DefaultStepDB
		if b := r.s.BackoffDB(); b != want {
			t.Errorf("max %v dB: lowered by %v dB, want %v", max, b, want)
		}
	}
}

// After Recover of playback without a clip, one step back up; silence
// does not count as playback, and Recover < 0 never gives the level back.
func TestRecoversAfterCleanPlayback(t *testing.T) {
	cfg := Config{Recover: 10 * time.Second}
	r := newRig(t, cfg)
	r.play(1, 20000, func(int) int64 { return 3 })
	r.play(300, 20000, func(i int) int64 { // clipping goes on at -3 dB, the last clip in the last period
		return int64(i % 30 / 29)
	})
	if b := r.s.BackoffDB(); b != 6 {
		t.Fatalf("lowered by %v dB, want 6", b)
	}
	r.play(3000, 0, nil) // 30 s of silence
	if b := r.s.BackoffDB(); b != 6 {
		t.Fatalf("after silence: lowered by %v dB, want still 6", b)
	}
	r.play(990, 20000, nil)
	if b := r.s.BackoffDB(); b != 6 {
		t.Fatalf("after 9.9 s of clean playback: lowered by %v dB, want still 6", b)
	}
	r.play(20, 20000, nil)
	if b := r.s.BackoffDB(); b != 3 {
		t.Fatalf("after 10 s of clean playback: lowered by %v dB, want 3", b)
	}
	if n := r.reg.Value(MetricUp); n != 1 {
		t.Errorf("%s = %d, want 1", MetricUp, n)
	}
	r.play(500, 20000, nil)
	r.play(1, 20000, func(int) int64 { return 1 }) // a clip restarts the count
	r.play(600, 20000, nil)
	if b := r.s.BackoffDB(); b != 3 {
		t.Fatalf("a clip 5 s into the next 10 s: lowered by %v dB, want still 3", b)
	}

	r = newRig(t, Config{Recover: -1})
	r.play(1, 20000, func(int) int64 { return 3 })
	r.play(100000, 20000, nil) // 1000 s
	if b := r.s.BackoffDB(); b != 3 {
		t.Errorf("Recover < 0: lowered by %v dB after 1000 s, want still 3", b)
	}
}

// Until the first step the output is the input, bit for bit; a step ramps
// without a jump: no sample-to-sample difference beyond the signal's own
// plus the ramp's share.
func TestBitExactUntilAStepThenRamped(t *testing.T) {
	r := newRig(t, Config{})
	r.play(300, 30000, nil)
	for i, v := range r.rec.out {
		if s := int16(30000 * math.Cos(2*math.Pi*440*float64(i)/rate)); v != s {
			t.Fatalf("sample %d: %d, input %d: not bit-exact before any clip", i, v, s)
		}
	}
	n0 := len(r.rec.out)
	r.play(1, 30000, func(int) int64 { return 3 })
	r.play(10, 30000, nil)
	maxStep := 30000 * 2 * math.Pi * 440 / rate // the sine's largest step
	out := r.rec.out[n0-1:]
	for i := 1; i < len(out); i++ {
		if d := math.Abs(float64(out[i]) - float64(out[i-1])); d > maxStep+30000*0.3/float64(DefaultRamp*rate/time.Second)+1 {
			t.Fatalf("sample %d after the step: jump %.0f, the sine's largest is %.0f", i, d, maxStep)
		}
	}
	if l := r.levelDB(30000); math.Abs(l+3) > 0.1 {
		t.Errorf("after the ramp: %.2f dB, want -3", l)
	}
}

func TestWriteDoesNotAllocate(t *testing.T) {
	r := newRig(t, Config{})
	r.play(1, 20000, func(int) int64 { return 3 })
	if n := testing.AllocsPerRun(100, func() { r.s.Write(r.buf); r.rec.out = r.rec.out[:0] }); n != 0 {
		t.Errorf("Write allocates %.1f times per call", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" ok; else in the message
	}{
		{Config{}, ""},
		{Config{MaxDB: 40}, "max 40 dB"},
		{Config{StepDB: 0.1}, "step 0.1 dB"},
		{Config{Clips: 100}, "clips 100"},
		{Config{Window: time.Millisecond}, "window 1ms"},
		{Config{Settle: -time.Second}, "settle -1s"},
		{Config{Recover: 48 * time.Hour}, "recover 48h0m0s"},
		{Config{Recover: -1}, ""},
		{Config{Ramp: 2 * time.Second}, "ramp 2s"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one naming %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(nil, &clips{}, Config{}, clock.NewFake(), nil, nil); err == nil {
		t.Error("New without a sink: no error")
	}
}
