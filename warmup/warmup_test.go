package warmup

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// recSink records what reaches the device.
type recSink struct {
	ch  int
	got []int16
}

func (r *recSink) Format() hw.AudioFormat {
	return hw.AudioFormat{SampleRate: 24000, Channels: r.ch}
}
func (r *recSink) Write(p []int16) error { r.got = append(r.got, p...); return nil }
func (r *recSink) Close() error          { return nil }

func level(x []int16) float64 {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return 10*math.Log10(e/float64(len(x))+1e-9) - 90.309
}

// The built-in sound is at its level, broadband and without clicks: it
// fades in and out over 20 ms.
func TestNoiseLevelFadesAndSpectrum(t *testing.T) {
	const rate = 24000
	s := Noise(DefaultDuration, rate, DefaultDBFS, 1)
	if len(s) != 4*rate {
		t.Fatalf("%d samples, want %d", len(s), 4*rate)
	}
	if l := level(s[rate/10 : len(s)-rate/10]); math.Abs(l-DefaultDBFS) > 0.5 {
		t.Errorf("level %.1f dBFS, want %.1f ± 0.5", l, DefaultDBFS)
	}
	if s[0] != 0 || s[len(s)-1] != 0 {
		t.Errorf("ends %d, %d: want 0 (no click)", s[0], s[len(s)-1])
	}
	edge := rate / 200
	for _, part := range [][]int16{s[:edge], s[len(s)-edge:]} {
		if l := level(part); l > DefaultDBFS-10 {
			t.Errorf("an end's 5 ms at %.1f dBFS: no fade", l)
		}
	}
	// Pink: about equal energy per octave. White noise would put 9 dB
	// more into the 3-6 kHz octave than into 375-750 Hz; a first
	// difference 27 dB more.
	lo, hi := octaveDB(s[rate/10:], rate, 375), octaveDB(s[rate/10:], rate, 3000)
	if math.Abs(hi-lo) > 4 {
		t.Errorf("octave at 3 kHz %.1f dB against %.1f dB at 375 Hz: not pink", hi, lo)
	}
	if Noise(0, rate, -26, 1) != nil || Noise(time.Second, 0, -26, 1) != nil {
		t.Error("a sound of no length or rate")
	}
	if a, b := Noise(time.Second, rate, -26, 1), Noise(time.Second, rate, -26, 2); a[rate/2] == b[rate/2] && a[rate/2+1] == b[rate/2+1] {
		t.Error("seeds 1 and 2 give the same noise")
	}
}

// octaveDB is the energy of x in [f, 2f) Hz, summed over the plain DFTs of
// 8 blocks of 1024 samples (test only).
func octaveDB(x []int16, rate int, f float64) float64 {
	const n = 1024
	var e float64
	for b := range 8 {
		blk := x[b*n : (b+1)*n]
		for k := int(f * n / float64(rate)); k < int(2*f*n/float64(rate)); k++ {
			var re, im float64
			for i, v := range blk {
				a := 2 * math.Pi * float64(k*i) / n
				re += float64(v) * math.Cos(a)
				im -= float64(v) * math.Sin(a)
			}
			e += re*re + im*im
		}
	}
	return 10 * math.Log10(e)
}

// The sound is mixed once into what the player writes, from the first
// Write, saturating; then the stream passes unchanged. The mic is held
// from New until the tail after the sound has passed.
func TestSinkPlaysTheSoundOnceAndHoldsTheMic(t *testing.T) {
	clk := clock.NewFake()
	dev := &recSink{ch: 1}
	sound := make([]int16, 600) // 25 ms
	for i := range sound {
		sound[i] = 1000
	}
	s, err := New(dev, sound, 100*time.Millisecond, clk)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Gated() || s.Played() {
		t.Fatal("before the first Write: the mic must be held, the sound not played")
	}
	clk.Advance(2 * time.Second) // the player starts late: the hold waits for it
	p := make([]int16, 240)      // 10 ms periods
	for i := range p {
		p[i] = 32000
	}
	for range 4 {
		if err := s.Write(p); err != nil {
			t.Fatal(err)
		}
		if p[0] != 32000 {
			t.Fatal("Write changed the caller's buffer")
		}
		clk.Advance(10 * time.Millisecond)
	}
	for i, v := range dev.got {
		want := int16(32000)
		if i < len(sound) {
			want = 32767 // 32000 + 1000, saturated
		}
		if v != want {
			t.Fatalf("sample %d: %d, want %d", i, v, want)
		}
	}
	if !s.Played() {
		t.Error("the whole sound was written, Played is false")
	}
	// Sound started at 2 s, 25 ms long, tail 100 ms: held until 2.125 s.
	if !s.Gated() {
		t.Errorf("at %v: released before the tail has passed", clk.Mono())
	}
	clk.Advance(90 * time.Millisecond)
	if s.Gated() {
		t.Errorf("at %v: still held after the sound and its tail", clk.Mono())
	}
	if n := testing.AllocsPerRun(100, func() { dev.got = dev.got[:0]; s.Write(p) }); n != 0 {
		t.Errorf("%v allocations per Write after the sound", n)
	}
}

// A speaker that is never written (its device failed) must not hold the
// mic for ever; nor does an empty sound hold it at all.
func TestSinkReleasesTheMic(t *testing.T) {
	clk := clock.NewFake()
	s, _ := New(&recSink{ch: 1}, make([]int16, 24000), 0, clk)
	clk.Advance(time.Second + DefaultTail + grace - time.Millisecond)
	if !s.Gated() {
		t.Error("released before the grace after the sound's length")
	}
	clk.Advance(2 * time.Millisecond)
	if s.Gated() {
		t.Error("never written: still held after the grace")
	}
	e, _ := New(&recSink{ch: 1}, nil, 0, clk)
	if e.Gated() || !e.Played() {
		t.Error("an empty sound holds the mic")
	}
	if _, err := New(&recSink{ch: 2}, nil, 0, clk); !errors.Is(err, ErrFormat) {
		t.Errorf("stereo sink: %v, want ErrFormat", err)
	}
}

// While the sound plays, Write allocates nothing once its buffer has the
// period's size.
func TestSinkWriteDoesNotAllocate(t *testing.T) {
	s, _ := New(&recSink{ch: 1}, make([]int16, 24000*10), 0, clock.NewFake())
	p := make([]int16, 240)
	s.Write(p)
	dev := s.AudioSink.(*recSink)
	if n := testing.AllocsPerRun(100, func() { dev.got = dev.got[:0]; s.Write(p) }); n != 0 {
		t.Errorf("%v allocations per Write while the sound plays", n)
	}
}
