package timestretch

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/robot-agent/robot-agent/codec/wav"
)

// stretchBy runs a Stretcher over in the way the player does (one operation
// at the start of a look-ahead window, then play on) until the output is
// about (1+pct) times the input. It returns the output.
func stretchBy(t testing.TB, s *Stretcher, in []int16, pct float64) []int16 {
	t.Helper()
	need := s.Need()
	win := make([]int16, 0, need+s.MaxLag())
	var out []int16
	pos := 0
	change := 0 // samples inserted (+) or removed (-)
	for pos < len(in) || len(win) > 0 {
		for len(win) < need && pos < len(in) {
			win = append(win, in[pos])
			pos++
		}
		if len(win) < need {
			out = append(out, win...)
			break
		}
		want := pct * float64(pos)
		switch {
		case pct < 0 && float64(change) > want:
			if L, ok := s.Accelerate(win); ok {
				win = win[:len(win)-L]
				change -= L
				out = append(out, win[:L]...)
				win = append(win[:0], win[L:]...)
				continue
			}
		case pct > 0 && float64(change) < want:
			if x, L, ok := s.Decelerate(win); ok {
				change += L
				out = append(out, x[:3*L]...)
				win = append(win[:0], x[3*L:]...)
				continue
			}
		}
		n := min(120, len(win)) // not periodic or quiet here: play on a little
		out = append(out, win[:n]...)
		win = append(win[:0], win[n:]...)
	}
	return out
}

// pitchMedian is the median fundamental (Hz) over voiced 40 ms frames,
// from the normalised autocorrelation peak in 70..400 Hz.
func pitchMedian(x []int16, rate int) (float64, int) {
	frame, lo, hi := rate/25, rate/400, rate/70
	var f0s []float64
	for start := 0; start+frame+hi < len(x); start += frame / 2 {
		best, bestC := 0, 0.0
		for lag := lo; lag <= hi; lag++ {
			var ab, aa, bb float64
			for i := start; i < start+frame; i++ {
				a, b := float64(x[i]), float64(x[i+lag])
				ab += a * b
				aa += a * a
				bb += b * b
			}
			if aa < 1e3*float64(frame) || bb == 0 {
				continue
			}
			if c := ab / math.Sqrt(aa*bb); c > bestC {
				best, bestC = lag, c
			}
		}
		if bestC > 0.8 {
			f0s = append(f0s, float64(rate)/float64(best))
		}
	}
	if len(f0s) == 0 {
		return 0, 0
	}
	slices.Sort(f0s)
	return f0s[len(f0s)/2], len(f0s)
}

func maxStep(x []int16) int {
	m := 0
	for i := 1; i < len(x); i++ {
		m = max(m, int(math.Abs(float64(x[i])-float64(x[i-1]))))
	}
	return m
}

// vowelish is a steady synthetic voiced signal: a 150 Hz pulse train
// through two resonators, with a slow amplitude envelope and pauses.
func vowelish(n int) []int16 {
	out := make([]int16, n)
	var ph, y1, y2 float64
	for i := range out {
		ph += 150.0 / 24000
		e := 0.0
		if ph >= 1 {
			ph--
			e = 1
		}
		t := float64(i) / 24000
		if math.Mod(t, 1.0) < 0.7 {
			e *= 0.6 + 0.4*math.Sin(2*math.Pi*3*t)
		} else {
			e = 0
		}
		y := e + 2*0.97*math.Cos(2*math.Pi*700/24000)*y1 - 0.97*0.97*y2
		y2, y1 = y1, y
		out[i] = int16(max(-32768, min(32767, 1500*y)))
	}
	return out
}

// espeakSpeech returns a spoken sentence at 24 kHz (espeak-ng + sox, which
// scripts/deps.sh installs), or nil if either is missing.
func espeakSpeech(t *testing.T) []int16 {
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("%s not installed: espeak speech case skipped", tool)
			return nil
		}
	}
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "raw.wav"), filepath.Join(dir, "s.wav")
	if b, err := exec.Command("espeak-ng", "-w", raw, "The robot waits for the network, then it keeps talking at its own pitch.").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, b)
	}
	if b, err := exec.Command("sox", raw, "-r", "24000", "-c", "1", "-b", "16", out).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v %s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := wav.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var x []int16
	buf := make([]int16, 4096)
	for {
		n, err := r.Read(buf)
		x = append(x, buf[:n]...)
		if err != nil {
			break
		}
	}
	return x
}

// TestStretchKeepsPitchAndContinuity: ±5 % on speech changes the length by
// about 5 %, keeps the median pitch within 3 % and adds no step larger
// than the signal's own.
func TestStretchKeepsPitchAndContinuity(t *testing.T) {
	cases := map[string][]int16{"synthetic vowels": vowelish(5 * 24000)}
	if sp := espeakSpeech(t); sp != nil {
		cases["espeak-ng sentence"] = sp
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range cases {
		f0in, nin := pitchMedian(in, 24000)
		if nin < 10 {
			t.Fatalf("%s: only %d voiced frames in the input", name, nin)
		}
		for _, pct := range []float64{-0.05, 0.05} {
			out := stretchBy(t, s, in, pct)
			got := float64(len(out))/float64(len(in)) - 1
			if math.Abs(got-pct) > 0.015 {
				t.Errorf("%s %+.0f%%: length changed by %+.2f%%", name, 100*pct, 100*got)
			}
			f0out, _ := pitchMedian(out, 24000)
			if math.Abs(f0out/f0in-1) > 0.03 {
				t.Errorf("%s %+.0f%%: median pitch %.1f Hz, input %.1f Hz", name, 100*pct, f0out, f0in)
			}
			if a, b := maxStep(out), maxStep(in); float64(a) > 1.1*float64(b)+100 {
				t.Errorf("%s %+.0f%%: largest step %d, input's %d (discontinuity)", name, 100*pct, a, b)
			}
			t.Logf("%s %+.0f%%: length %+.2f%%, pitch %.1f -> %.1f Hz, max step %d -> %d", name, 100*pct, 100*got, f0in, f0out, maxStep(in), maxStep(out))
		}
	}
}

func TestStretchDeclinesNoise(t *testing.T) {
	s, _ := New(Config{})
	x := make([]int16, s.Need()+10)
	seed := uint32(1)
	for i := range x {
		seed = seed*1664525 + 1013904223
		x[i] = int16(seed >> 17) // loud white noise: neither periodic nor quiet
	}
	orig := slices.Clone(x)
	if _, ok := s.Accelerate(x); ok {
		t.Error("accelerated loud noise")
	}
	if !slices.Equal(x, orig) {
		t.Error("declined Accelerate changed the input")
	}
	if _, ok := s.Accelerate(x[:10]); ok {
		t.Error("accelerated a window shorter than Need")
	}
	if s.Quiet(x) {
		t.Error("loud noise reported quiet")
	}
}

func TestQuiet(t *testing.T) {
	s, _ := New(Config{})
	x := make([]int16, s.Need()+100)
	for i := range x {
		x[i] = int16(250 * math.Sin(float64(i)/7)) // RMS ~177, under the default 300
	}
	if !s.Quiet(x) {
		t.Error("a -45 dBFS sine not reported quiet")
	}
	if !s.Quiet(make([]int16, 10)) {
		t.Error("a short silent window not reported quiet")
	}
	if s.Quiet(nil) {
		t.Error("an empty window reported quiet")
	}
	x[s.Need()+50] = 32767 // beyond the window: ignored
	if !s.Quiet(x) {
		t.Error("a sample beyond Need() changed the result")
	}
	for i := range s.Need() {
		x[i] *= 4 // RMS ~707
	}
	if s.Quiet(x) {
		t.Error("a -33 dBFS sine reported quiet")
	}
}

func TestStretchNoAllocs(t *testing.T) {
	s, _ := New(Config{})
	in := vowelish(24000)
	buf := make([]int16, s.Need(), s.Need()+s.MaxLag())
	if n := testing.AllocsPerRun(100, func() {
		copy(buf[:s.Need()], in[3000:])
		s.Accelerate(buf[:s.Need()])
		copy(buf[:s.Need()], in[3000:])
		s.Decelerate(buf[:s.Need()])
	}); n != 0 {
		t.Errorf("%v allocations per accelerate+decelerate", n)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{SampleRate: 100}, {MinLag: 100, MaxLag: 50}, {MinCorrelation: 2}, {QuietLevel: -1}} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", c, err)
		}
	}
}
