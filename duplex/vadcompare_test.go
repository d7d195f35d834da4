package duplex

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/room"
)

// RunVAD on the simulator's speech in pink noise at 5 dB: the spectral
// detector finds more speech than the energy detector (the baseline, in
// the same run) with few false positives, the pre-roll keeps first
// syllables, and every count adds up.
func TestRunVADComparesDetectors(t *testing.T) {
	near := Synthetic(1500*time.Millisecond, 2)
	run := func(det string) VADResult {
		r, err := RunVAD(VADScene{Near: near, Trials: 3, Noise: room.NoisePink, SNRDB: 5, Seed: 1, VAD: capture.VADConfig{Detector: det}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: P %.2f R %.2f FP %.3f; P56 R %.2f; raw onsets %v, pump onsets %v, clipped %d/%d, false %d", det,
			r.Frames.Precision(), r.Frames.Recall(), r.Frames.FPR(), r.FramesActive.Recall(), r.RawOnsets, r.Onsets, r.Clipped, r.Phrases, r.FalseStarts)
		if r.Phrases != 3 {
			t.Errorf("%s: %d phrases", det, r.Phrases)
		}
		c := r.Frames
		if n := c.TP + c.FP + c.FN + c.TN; n != r.FramesActive.TP+r.FramesActive.FP+r.FramesActive.FN+r.FramesActive.TN || n == 0 {
			t.Errorf("%s: frame counts %+v vs %+v", det, c, r.FramesActive)
		}
		return r
	}
	e, s := run("energy"), run("spectral")
	if s.Frames.Recall() <= e.Frames.Recall() {
		t.Errorf("spectral recall %.2f not above energy's %.2f at 5 dB", s.Frames.Recall(), e.Frames.Recall())
	}
	if s.Frames.Recall() < 0.7 || s.Frames.FPR() > 0.05 || s.FalseStarts > 0 || s.Clipped > 0 || len(s.Onsets) != 3 {
		t.Errorf("spectral at 5 dB: recall %.2f, false positives %.3f, %d false starts, %d clipped, %d onsets",
			s.Frames.Recall(), s.Frames.FPR(), s.FalseStarts, s.Clipped, len(s.Onsets))
	}
	for _, o := range s.RawOnsets {
		if o < 20*time.Millisecond {
			t.Errorf("raw onset %v below one frame", o)
		}
	}
}

func TestRunVADErrors(t *testing.T) {
	if _, err := RunVAD(VADScene{}); !errors.Is(err, ErrScenario) {
		t.Errorf("no near end: %v", err)
	}
	if _, err := RunVAD(VADScene{Near: make([]int16, 8000), Noise: "rain", SNRDB: 5}); err == nil {
		t.Error("unknown noise accepted")
	}
	if _, err := RunVAD(VADScene{Near: make([]int16, 8000), VAD: capture.VADConfig{Detector: "neural"}}); err == nil {
		t.Error("unknown detector accepted")
	}
}

func TestLabelsActive(t *testing.T) {
	s := make([]int16, 16000)
	for i := 4000; i < 12000; i++ {
		a := 8000.0
		if i >= 8000 {
			a = 450 // 25 dB down: in Labels, not in LabelsActive
		}
		s[i] = int16(a * math.Sin(float64(i)))
	}
	l, a := Labels(s), LabelsActive(s)
	if !l[15] || !a[15] || !l[30] || a[30] || l[45] || a[45] || a[5] {
		t.Errorf("labels %v/%v, %v/%v, %v/%v", l[15], a[15], l[30], a[30], l[45], a[45])
	}
}

// P56 on a tone burst: the active level is the RMS over the active samples
// (within the 6 dB steps' interpolation error), a little under the burst's
// own RMS because the activity includes the hangover; the activity covers
// the burst, the envelope's fall to the threshold (about 100 ms for a tone
// 15.9 dB above it) and the 200 ms hangover, and a pause shorter than the
// hangover stays active.
func TestP56(t *testing.T) {
	const rate = 16000
	s := make([]int16, 3*rate)
	put := func(from, to int, amp float64) {
		for i := from; i < to; i++ {
			s[i] = int16(amp * math.Sin(2*math.Pi*440*float64(i)/rate))
		}
	}
	put(rate/2, rate, 3277)         // 0.5 s at -10 dBFS peak
	put(rate+rate/10, 2*rate, 3277) // after a 100 ms pause
	level, act := P56(s, rate)
	var e float64
	var n int
	first, last := -1, -1
	for i, a := range act {
		if a {
			e += float64(s[i]) * float64(s[i])
			n++
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	rms := 10*math.Log10(e/float64(n)) - 90.309
	sine := 20*math.Log10(3277.0/32768) - 3.0103
	if math.Abs(level-rms) > 0.6 || level > sine || level < sine-1.5 {
		t.Errorf("active level %.2f dBFS; RMS over the active samples %.2f, the tone's %.2f", level, rms, sine)
	}
	if d := first - rate/2; d < 0 || d > rate/25 {
		t.Errorf("activity starts %d samples after the burst", d)
	}
	if d := last - (2*rate + rate/5); d < rate/20 || d > rate*3/20 {
		t.Errorf("activity ends %d samples after burst end + 200 ms, want 50..150 ms", d)
	}
	for i := rate; i < rate+rate/10; i++ {
		if !act[i] {
			t.Fatalf("sample %d in the 100 ms pause is not active", i)
		}
	}
	if l, a := P56(make([]int16, rate), rate); !math.IsInf(l, -1) || slices.Contains(a, true) {
		t.Errorf("silence: level %v, some active", l)
	}
	lab := LabelsP56(s)
	if !lab[60] || lab[10] || !lab[52] || lab[len(lab)-1] {
		t.Errorf("labels: frame 60 %v (want true), 10 %v, 52 (pause) %v, last %v", lab[60], lab[10], lab[52], lab[len(lab)-1])
	}
}

// IdleMS appends noise alone: the frame counts and the trials' starts are
// those of the same scene without it, and a detector set to fire on noise
// (energy, 6 dB over the floor, 20 ms min speech, 100 ms hangover) starts
// utterances there.
func TestRunVADIdle(t *testing.T) {
	near := Synthetic(1200*time.Millisecond, 3)
	sc := VADScene{Near: near, Trials: 2, Noise: room.NoiseBabble, SNRDB: 0, Seed: 4,
		VAD: capture.VADConfig{Detector: "energy", StartDB: 6, StopDB: 6, MinSpeechMS: 20, HangoverMS: 100}}
	a, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	sc.IdleMS = 20000
	b, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	if a.Frames != b.Frames || a.FramesP56 != b.FramesP56 || a.FalseStarts != b.FalseStarts || a.IdleStarts != 0 {
		t.Errorf("without idle %+v, with %+v", a, b)
	}
	if b.IdleStarts == 0 {
		t.Errorf("energy detector at 6 dB in babble: no start in 20 s of noise alone")
	}
	t.Logf("idle starts in 20 s: %d", b.IdleStarts)
}

// A warm-up runs the detector and the pump through noise alone and counts
// nothing there: the frames counted are the same as without it, and the
// utterances a touchy detector starts in 20 s of babble alone (counted as
// idle starts when the same noise follows the trials) are not false starts.
func TestRunVADWarmup(t *testing.T) {
	near := Synthetic(1200*time.Millisecond, 3)
	sc := VADScene{Near: near, Trials: 2, Noise: room.NoiseBabble, SNRDB: 0, Seed: 4,
		VAD: capture.VADConfig{Detector: "energy", StartDB: 3, StopDB: 3, MinSpeechMS: 20, HangoverMS: 60, FloorRiseDBPerS: 0.2}}
	a, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	sc.IdleMS = 20000
	idle, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	sc.IdleMS, sc.WarmupMS = 0, 20000
	w, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	total := func(c VADCounts) int { return c.TP + c.FP + c.FN + c.TN }
	if total(w.Frames) != total(a.Frames) || total(w.FramesP56) != total(a.FramesP56) {
		t.Errorf("frames counted with a warm-up %+v, without %+v", w.Frames, a.Frames)
	}
	if idle.IdleStarts < 3 || w.FalseStarts > a.FalseStarts || w.IdleStarts != 0 {
		t.Errorf("starts in 20 s of noise alone %d; false starts without warm-up %d, with %d (idle %d)", idle.IdleStarts, a.FalseStarts, w.FalseStarts, w.IdleStarts)
	}
	t.Logf("idle starts in 20 s: %d; false starts %d → %d with the warm-up", idle.IdleStarts, a.FalseStarts, w.FalseStarts)
}

// rawOnsets: the end of the first frame called speech from two frames
// before the labelled onset, minus the onset; a phrase without an onset or
// without a call before its end gives none.
func TestRawOnsets(t *testing.T) {
	f := micFrame
	ph := []phrase{{start: 10 * f, end: 20 * f}, {start: 30 * f, end: 40 * f}, {start: 50 * f, end: 60 * f}}
	for _, tc := range []struct {
		name   string
		calls  []int // frames called speech
		onsets []int // per phrase, frame of the labelled onset (-1: none)
		want   []time.Duration
	}{
		{"on the onset frame", []int{12, 33, 51}, []int{12, 33, 51}, []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}},
		{"late", []int{15}, []int{12, -1, -1}, []time.Duration{80 * time.Millisecond}},
		{"early, bounded by two frames", []int{5, 11, 31, 32}, []int{12, 34, -1}, []time.Duration{0, -20 * time.Millisecond}},
		{"never called in the phrase", []int{21}, []int{12, -1, -1}, nil},
	} {
		called := make([]bool, 60)
		for _, k := range tc.calls {
			called[k] = true
		}
		got := rawOnsets(called, ph, func(i int) int {
			if tc.onsets[i] < 0 {
				return ph[i].end
			}
			return tc.onsets[i] * f
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLookaheadTakesInTheFramesBefore(t *testing.T) {
	called := []bool{false, false, false, true, false, false, false, true, true}
	for _, tc := range []struct {
		n    int
		want []bool
	}{
		{0, called},
		{1, []bool{false, false, true, true, false, false, true, true, true}},
		{2, []bool{false, true, true, true, false, true, true, true, true}},
		{4, []bool{true, true, true, true, true, true, true, true, true}},
	} {
		if got := lookahead(called, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("lookahead %d: %v, want %v", tc.n, got, tc.want)
		}
	}
}

// A lookahead finds the onset frames the detector calls late (recall up)
// at a few more false positives; 0 is the detector's own counts, and the
// onsets are the detector's whatever the lookahead.
func TestRunVADLookahead(t *testing.T) {
	near := Synthetic(1500*time.Millisecond, 2)
	sc := VADScene{Near: near, Trials: 3, Noise: room.NoisePink, SNRDB: 5, Seed: 1, VAD: capture.VADConfig{Detector: "spectral"}, LookaheadMS: []int{0, 40, 200}}
	r, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lookahead) != 3 || r.Lookahead[0].Frames != r.Frames || r.Lookahead[0].FramesActive != r.FramesActive || r.Lookahead[0].FramesP56 != r.FramesP56 {
		t.Fatalf("lookahead 0 differs from the detector's counts: %+v vs %+v", r.Lookahead, r.Frames)
	}
	for i := 1; i < len(r.Lookahead); i++ {
		a, b := r.Lookahead[i-1].FramesActive, r.Lookahead[i].FramesActive
		t.Logf("%d ms: P56 recall %.3f, false positives %.3f", r.Lookahead[i].MS, b.Recall(), b.FPR())
		if a.TP+a.FP+a.FN+a.TN != b.TP+b.FP+b.FN+b.TN || b.TP < a.TP || b.FP < a.FP {
			t.Errorf("%d ms: %+v after %+v", r.Lookahead[i].MS, b, a)
		}
	}
	if last := r.Lookahead[2].FramesActive; last.TP <= r.FramesActive.TP {
		t.Errorf("200 ms lookahead found no more speech: %+v vs %+v", last, r.FramesActive)
	}
	sc.LookaheadMS = nil
	r0, err := RunVAD(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r0.RawOnsets, r.RawOnsets) || !slices.Equal(r0.RawOnsetsActive, r.RawOnsetsActive) || !slices.Equal(r0.Onsets, r.Onsets) {
		t.Errorf("onsets moved with the lookahead: %v %v vs %v %v", r.RawOnsets, r.Onsets, r0.RawOnsets, r0.Onsets)
	}
	for _, ms := range []int{-20, 30, MaxLookaheadMS + 20} {
		sc.LookaheadMS = []int{ms}
		if _, err := RunVAD(sc); !errors.Is(err, ErrScenario) {
			t.Errorf("lookahead %d ms: %v", ms, err)
		}
	}
}
