package resample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// conversions the agent needs (mic capture to 16 kHz, TTS 24 kHz to the
// speaker's rate) plus the reverse directions.
var conversions = []struct{ in, out int }{
	{16000, 24000}, {24000, 16000}, {48000, 16000}, {44100, 16000},
	{24000, 48000}, {24000, 44100}, {16000, 48000}, {48000, 24000},
}

func tone(rate int, freq, amp float64, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(math.Round(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return s
}

func oneShot(t testing.TB, r *Resampler, src []int16) []int16 {
	t.Helper()
	dst := make([]int16, r.OutLen(len(src)))
	n := r.Process(dst, src)
	if n != len(dst) {
		t.Fatalf("%d→%d: Process of %d samples from the start gave %d, want OutLen %d", r.InRate(), r.OutRate(), len(src), n, len(dst))
	}
	return dst
}

// steady returns the part of y after the filter's start-up transient and
// before its end, where the output represents the input fully.
func steady(r *Resampler, y []int16) []int16 {
	skip := int(2*r.Delay()) + 16
	return y[skip : len(y)-skip]
}

// fit returns the least-squares amplitude of a sinusoid at freq in y and the
// RMS of what is left after removing it (and any DC offset).
func fit(y []int16, rate int, freq float64) (amp, residual float64) {
	w := 2 * math.Pi * freq / float64(rate)
	// Normal equations for y ≈ a·cos + b·sin + c.
	var scc, sss, scs, sc, ss, n, syc, sys, sy float64
	for i, v := range y {
		c, s := math.Cos(w*float64(i)), math.Sin(w*float64(i))
		f := float64(v)
		scc += c * c
		sss += s * s
		scs += c * s
		sc += c
		ss += s
		n++
		syc += f * c
		sys += f * s
		sy += f
	}
	a, b, c := solve3([3][4]float64{
		{scc, scs, sc, syc},
		{scs, sss, ss, sys},
		{sc, ss, n, sy},
	})
	var res float64
	for i, v := range y {
		e := float64(v) - (a*math.Cos(w*float64(i)) + b*math.Sin(w*float64(i)) + c)
		res += e * e
	}
	return math.Hypot(a, b), math.Sqrt(res / n)
}

// solve3 solves a 3x3 linear system given as an augmented matrix.
func solve3(m [3][4]float64) (float64, float64, float64) {
	for col := range 3 {
		p := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[p][col]) {
				p = r
			}
		}
		m[col], m[p] = m[p], m[col]
		for r := range 3 {
			if r != col {
				f := m[r][col] / m[col][col]
				for k := col; k < 4; k++ {
					m[r][k] -= f * m[col][k]
				}
			}
		}
	}
	return m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]
}

func rms(y []int16) float64 {
	var s float64
	for _, v := range y {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(y)))
}

func db(x float64) float64 { return 20 * math.Log10(x) }

func passbandTones(nyq, pass float64) []float64 {
	fs := []float64{100, 250, 500, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 10000, 12000, 15000, 18000}
	var out []float64
	for _, f := range fs {
		if f < pass*nyq {
			out = append(out, f)
		}
	}
	return append(out, pass*nyq)
}

// TestPassband checks, for every quality, that tones up to the passband
// edge come out within ±0.5 dB, at the time Delay says, and without images
// or aliases (residual after removing the tone ≥ the quality's rejection,
// allowing for int16 rounding noise).
func TestPassband(t *testing.T) {
	for _, q := range []Quality{QualityDefault, QualityLow, QualityHigh} {
		pass, atten, _ := q.design()
		for _, c := range conversions {
			t.Run(fmt.Sprintf("%v/%d-%d", q, c.in, c.out), func(t *testing.T) {
				r, err := New(c.in, c.out, q)
				if err != nil {
					t.Fatal(err)
				}
				nyq := float64(min(c.in, c.out)) / 2
				const amp = 16000.0
				for _, f := range passbandTones(nyq, pass) {
					r.Reset()
					y := steady(r, oneShot(t, r, tone(c.in, f, amp, c.in/5)))
					got, res := fit(y, c.out, f)
					if g := db(got / amp); math.Abs(g) > 0.5 {
						t.Errorf("%.0f Hz: gain %+.3f dB, want within ±0.5 dB", f, g)
					}
					// Images/aliases plus rounding noise (0.29 LSB RMS
					// from input and output rounding each).
					floor := math.Max(db(0.5/(amp/math.Sqrt2)), -atten)
					if rel := db(res / (got / math.Sqrt2)); rel > floor+3 {
						t.Errorf("%.0f Hz: residual %.1f dB relative to the tone, want <= %.1f dB", f, rel, floor+3)
					}
				}
				// Time alignment: with the delay Delay reports, the output
				// matches the ideal tone sampled at the output rate.
				r.Reset()
				f := 1000.0
				y := oneShot(t, r, tone(c.in, f, amp, c.in/4))
				var e2, s2 float64
				for k := int(2 * r.Delay()); k < len(y)-int(2*r.Delay()); k++ {
					want := amp * math.Sin(2*math.Pi*f*(float64(k)-r.Delay())/float64(c.out))
					e2 += (float64(y[k]) - want) * (float64(y[k]) - want)
					s2 += want * want
				}
				if rel := db(math.Sqrt(e2 / s2)); rel > -50 {
					t.Errorf("1 kHz against the ideal tone delayed by Delay() = %.2f samples: error %.1f dB, want <= -50 dB", r.Delay(), rel)
				}
			})
		}
	}
}

// TestStopband checks that tones above the output Nyquist frequency are
// rejected by at least the quality's attenuation when decimating.
func TestStopband(t *testing.T) {
	for _, q := range []Quality{QualityDefault, QualityLow, QualityHigh} {
		_, atten, _ := q.design()
		for _, c := range conversions {
			if c.out >= c.in {
				continue // nothing above the output Nyquist to reject; images are checked by TestPassband
			}
			t.Run(fmt.Sprintf("%v/%d-%d", q, c.in, c.out), func(t *testing.T) {
				r, err := New(c.in, c.out, q)
				if err != nil {
					t.Fatal(err)
				}
				nyqOut, nyqIn := float64(c.out)/2, float64(c.in)/2
				const amp = 30000.0
				for _, rel := range []float64{1.01, 1.05, 1.1, 1.25, 1.5, 2, 2.5, 2.9} {
					f := rel * nyqOut
					if f >= nyqIn*0.995 {
						continue
					}
					r.Reset()
					y := steady(r, oneShot(t, r, tone(c.in, f, amp, c.in/5)))
					// Rounding the output adds about 0.29 LSB RMS.
					got := db(math.Max(rms(y)-0.3, 0.01) / (amp / math.Sqrt2))
					if got > -atten {
						t.Errorf("%.0f Hz (%.2f × output Nyquist): output at %.1f dB, want <= %.0f dB", f, rel, got, -atten)
					}
				}
			})
		}
	}
}

func TestStreamingEqualsOneShot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]int16, 48000)
	for i := range src {
		src[i] = int16(rng.IntN(40000) - 20000)
	}
	chunkings := map[string]func() int{
		"1":       func() int { return 1 },
		"7":       func() int { return 7 },
		"10ms@48": func() int { return 480 },
		"random":  func() int { return rng.IntN(1000) },
		"0-or-3":  func() int { return 3 * rng.IntN(2) },
	}
	for _, c := range conversions {
		ref, err := New(c.in, c.out, QualityDefault)
		if err != nil {
			t.Fatal(err)
		}
		want := oneShot(t, ref, src)
		if len(want) != ref.OutLen(len(src)) {
			t.Fatalf("%d→%d: one-shot gave %d samples, want %d", c.in, c.out, len(want), ref.OutLen(len(src)))
		}
		for name, next := range chunkings {
			r, _ := New(c.in, c.out, QualityDefault)
			var got []int16
			buf := make([]int16, r.OutLen(1000))
			for rest := src; len(rest) > 0; {
				n := min(next(), len(rest))
				out := buf[:r.OutLen(n)] // exactly the documented size
				m := r.Process(out, rest[:n])
				got = append(got, out[:m]...)
				rest = rest[n:]
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d→%d chunks %s: output differs from one-shot (%d vs %d samples)", c.in, c.out, name, len(got), len(want))
			}
		}
	}
}

func TestOutLen(t *testing.T) {
	for _, tt := range []struct{ in, out, n, want int }{
		{24000, 48000, 240, 480}, {24000, 48000, 1, 2}, {48000, 16000, 480, 160},
		{48000, 16000, 1, 1}, {48000, 16000, 0, 0}, {44100, 16000, 441, 160},
		{44100, 16000, 442, 161}, {16000, 24000, 3, 5}, {24000, 44100, 80, 147}, {16000, 16000, 5, 5},
	} {
		r, err := New(tt.in, tt.out, QualityDefault)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.OutLen(tt.n); got != tt.want {
			t.Errorf("%d→%d OutLen(%d) = %d, want %d", tt.in, tt.out, tt.n, got, tt.want)
		}
	}
}

func TestReset(t *testing.T) {
	src := tone(48000, 440, 10000, 4800)
	r, _ := New(48000, 16000, QualityDefault)
	first := oneShot(t, r, src)
	oneShot(t, r, src[:1234]) // leave state and phase mid-stream
	r.Reset()
	if again := oneShot(t, r, src); !slices.Equal(again, first) {
		t.Error("after Reset the output differs from a new resampler's")
	}
}

func TestSameRateCopies(t *testing.T) {
	r, err := New(16000, 16000, QualityHigh)
	if err != nil {
		t.Fatal(err)
	}
	src := tone(16000, 300, 1000, 100)
	if got := oneShot(t, r, src); !slices.Equal(got, src) || r.Delay() != 0 {
		t.Errorf("same-rate resampler changed the signal or has delay %v", r.Delay())
	}
}

// TestSaturates checks that filter overshoot on full-scale input clips
// instead of wrapping around.
func TestSaturates(t *testing.T) {
	src := make([]int16, 4800)
	for i := range src {
		if (i/120)%2 == 0 {
			src[i] = math.MaxInt16
		} else {
			src[i] = math.MinInt16
		}
	}
	for _, c := range conversions {
		r, _ := New(c.in, c.out, QualityDefault)
		y := oneShot(t, r, src)
		peak := 0
		for k, v := range y {
			// Map output k back to the input sample it represents.
			i := int(math.Round((float64(k) - r.Delay()) * float64(c.in) / float64(c.out)))
			if i < 10 || i >= len(src)-10 || i%120 < 10 || i%120 >= 110 {
				continue // near an edge of the square wave
			}
			if (src[i] > 0) != (v > 0) {
				t.Fatalf("%d→%d: output %d at %d has the wrong sign for input %d (wrapped?)", c.in, c.out, v, k, src[i])
			}
			peak = max(peak, int(v))
		}
		if peak != math.MaxInt16 {
			t.Errorf("%d→%d: peak %d, want clipping at %d", c.in, c.out, peak, math.MaxInt16)
		}
	}
}

// ProcessFloat is Process without rounding or saturation: on the same
// input it gives Process's output before rounding, at any scale.
func TestProcessFloatMatchesProcess(t *testing.T) {
	src := make([]int16, 4800)
	for i := range src {
		src[i] = int16(20000 * math.Sin(2*math.Pi*float64(i)*0.013) * math.Sin(2*math.Pi*float64(i)*0.0007))
	}
	for _, c := range conversions {
		ri, _ := New(c.in, c.out, QualityHigh)
		rf, _ := New(c.in, c.out, QualityHigh)
		y := oneShot(t, ri, src)
		for _, scale := range []float32{1, 1e-6, 1e3} {
			rf.Reset()
			fs := make([]float32, len(src))
			for i, v := range src {
				fs[i] = float32(v) * scale
			}
			fy := make([]float32, rf.OutLen(len(fs))+8)
			n := rf.ProcessFloat(fy, fs[:len(fs)/3])
			n += rf.ProcessFloat(fy[n:], fs[len(fs)/3:]) // in two calls
			fy = fy[:n]
			if len(fy) != len(y) {
				t.Fatalf("%d→%d: %d float samples, %d PCM16", c.in, c.out, len(fy), len(y))
			}
			for k := range y {
				if d := math.Abs(float64(fy[k]/scale) - float64(y[k])); d > 0.5+1e-3*math.Abs(float64(y[k])) {
					t.Fatalf("%d→%d scale %g: sample %d: %g, PCM16 %d", c.in, c.out, scale, k, fy[k]/scale, y[k])
				}
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, tt := range []struct {
		in, out int
		q       Quality
		want    error
	}{
		{0, 16000, QualityDefault, ErrRate},
		{16000, -1, QualityDefault, ErrRate},
		{999, 16000, QualityDefault, ErrRate},
		{16000, 384001, QualityDefault, ErrRate},
		{16000, 16001, QualityDefault, ErrRatio},
		{44100, 96001, QualityDefault, ErrRatio},
		{16000, 24000, Quality(7), ErrQuality},
		{16000, 24000, Quality(-1), ErrQuality},
	} {
		r, err := New(tt.in, tt.out, tt.q)
		if !errors.Is(err, tt.want) || r != nil {
			t.Errorf("New(%d, %d, %v) = %v, %v; want %v", tt.in, tt.out, tt.q, r, err, tt.want)
		}
	}
	// Awkward but legal ratios work.
	for _, c := range [][2]int{{44100, 48000}, {8000, 44100}, {22050, 16000}, {11025, 16000}} {
		if _, err := New(c[0], c[1], QualityDefault); err != nil {
			t.Errorf("New(%d, %d): %v", c[0], c[1], err)
		}
	}
}

func TestProcessShortDstPanics(t *testing.T) {
	r, _ := New(24000, 48000, QualityDefault)
	defer func() {
		if recover() == nil {
			t.Error("Process with a too-short dst did not panic")
		}
	}()
	r.Process(make([]int16, 479), make([]int16, 240))
}

func TestProcessDoesNotAllocate(t *testing.T) {
	for _, c := range conversions {
		r, _ := New(c.in, c.out, QualityDefault)
		src := tone(c.in, 440, 8000, c.in/100)
		dst := make([]int16, r.OutLen(len(src)))
		if n := testing.AllocsPerRun(50, func() { r.Process(dst, src) }); n != 0 {
			t.Errorf("%d→%d: Process allocates %v times per call", c.in, c.out, n)
		}
		fsrc, fdst := make([]float32, len(src)), make([]float32, len(dst))
		if n := testing.AllocsPerRun(50, func() { r.ProcessFloat(fdst, fsrc) }); n != 0 {
			t.Errorf("%d→%d: ProcessFloat allocates %v times per call", c.in, c.out, n)
		}
	}
}

func TestDownmix(t *testing.T) {
	for _, tt := range []struct {
		name     string
		dst      int
		in       []int16
		channels int
		want     []int16
	}{
		{"stereo", 8, []int16{100, 200, -100, -201, 32767, 32767, -32768, -32768}, 2, []int16{150, -151, 32767, -32768}},
		{"rounds half away from zero", 8, []int16{1, 2, -1, -2, 0, 1, 0, -1}, 2, []int16{2, -2, 1, -1}},
		{"partial frame ignored", 8, []int16{10, 20, 30}, 2, []int16{15}},
		{"dst short", 1, []int16{10, 20, 30, 40}, 2, []int16{15}},
		{"mono copies", 8, []int16{1, -2, 3}, 1, []int16{1, -2, 3}},
		{"3 channels", 8, []int16{3, 3, 4, -32768, -32768, -32768}, 3, []int16{3, -32768}},
		{"empty", 8, nil, 2, []int16{}},
	} {
		dst := make([]int16, tt.dst)
		n := Downmix(dst, tt.in, tt.channels)
		if !slices.Equal(dst[:n], tt.want) {
			t.Errorf("%s: Downmix = %v, want %v", tt.name, dst[:n], tt.want)
		}
	}
}

func TestUpmix(t *testing.T) {
	dst := make([]int16, 7)
	n := Upmix(dst, []int16{1, -2, 3, 4}, 2)
	if want := []int16{1, 1, -2, -2, 3, 3}; n != 6 || !slices.Equal(dst[:n], want) {
		t.Errorf("Upmix = %d %v, want %v", n, dst[:n], want)
	}
	if n := Upmix(dst, []int16{5, 6}, 3); n != 6 || !slices.Equal(dst[:6], []int16{5, 5, 5, 6, 6, 6}) {
		t.Errorf("Upmix 3 channels = %d %v", n, dst[:n])
	}
	// Downmix(Upmix(x)) == x.
	mono := tone(16000, 123, 30000, 100)
	st := make([]int16, 200)
	back := make([]int16, 100)
	Downmix(back, st[:Upmix(st, mono, 2)], 2)
	if !slices.Equal(back, mono) {
		t.Error("Downmix(Upmix(x)) != x")
	}
	for _, f := range []func(){
		func() { Upmix(dst, mono, 0) },
		func() { Downmix(dst, mono, -1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("channels < 1 did not panic")
				}
			}()
			f()
		}()
	}
	if n := testing.AllocsPerRun(20, func() { Downmix(back, st, 2); Upmix(st, back, 2) }); n != 0 {
		t.Errorf("Downmix/Upmix allocate %v times", n)
	}
}

// BenchmarkResample24kTo48k measures one 10 ms chunk (240 in, 480 out), the
// TTS-to-speaker path.
func BenchmarkResample24kTo48k(b *testing.B) {
	for _, q := range []Quality{QualityLow, QualityDefault, QualityHigh} {
		b.Run(q.String(), func(b *testing.B) {
			r, _ := New(24000, 48000, q)
			src := tone(24000, 440, 8000, 240)
			dst := make([]int16, r.OutLen(len(src)))
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(src)))
			for b.Loop() {
				r.Process(dst, src)
			}
		})
	}
}

// BenchmarkResample48kTo16k measures one 10 ms chunk of mic capture.
func BenchmarkResample48kTo16k(b *testing.B) {
	r, _ := New(48000, 16000, QualityDefault)
	src := tone(48000, 440, 8000, 480)
	dst := make([]int16, r.OutLen(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		r.Process(dst, src)
	}
}
