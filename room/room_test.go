package room

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestValidateNamesFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{DelayMS: -1}, "delay_ms -1"},
		{Config{EchoGainDB: 30}, "echo_gain_db 30"},
		{Config{RT60: 3}, "rt60_s 3"},
		{Config{DriftPPM: 5000}, "drift_ppm 5000"},
		{Config{Noise: "rain"}, `noise "rain"`},
		{Config{Noise: NoisePink, NoiseDBFS: 3}, "noise_dbfs 3"},
		{Config{SoftClip: -1}, "soft_clip -1"},
	} {
		err := tc.c.Validate()
		if !errors.Is(err, ErrConfig) || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
	if err := Moderate().Validate(); err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// An impulse played at index 0 arrives after the delay with the echo gain.
func TestDirectPathDelayAndGain(t *testing.T) {
	for _, tc := range []struct{ delayMS, gainDB float64 }{{20, 0}, {100, -10}, {250, 6}} {
		p, err := New(Config{DelayMS: tc.delayMS, EchoGainDB: tc.gainDB})
		if err != nil {
			t.Fatal(err)
		}
		// A 200 Hz tone burst at 16 kHz avoids resampler edge effects.
		far := make([]int16, 16000)
		for i := range far {
			far[i] = int16(8000 * math.Sin(2*math.Pi*200*float64(i)/16000))
		}
		if err := p.Play(0, far, 16000); err != nil {
			t.Fatal(err)
		}
		mic := make([]int16, 20000)
		p.Capture(0, mic)
		d := int(tc.delayMS * 16)
		// Level well inside the burst.
		got := rms(mic[d+4000:d+12000]) / rms(far[4000:12000])
		if db := 20 * math.Log10(got); math.Abs(db-tc.gainDB) > 0.3 {
			t.Errorf("delay %v gain %v: measured %v dB", tc.delayMS, tc.gainDB, db)
		}
		// Nothing before the echo arrives (resampler/interp pre-ring only).
		if r := rms(mic[:d-20]); r > 1 {
			t.Errorf("delay %v: echo before the delay, rms %v", tc.delayMS, r)
		}
		// Best alignment of a noise burst is the configured delay.
		q, _ := New(Config{DelayMS: tc.delayMS, EchoGainDB: tc.gainDB})
		buf := make([]float32, len(far))
		NewNoiseMust(t, NoiseWhite).Fill(buf)
		for i := range far {
			far[i] = int16(buf[i] * 3000)
		}
		q.Play(0, far, 16000)
		clear(mic)
		q.Capture(0, mic)
		if lag := bestLag(far[2000:10000], mic, 2000, 2000+d+200) - 2000; absInt(lag-d) > 1 {
			t.Errorf("delay %v: best lag %d, want %d", tc.delayMS, lag, d)
		}
	}
}

// The mic clock running fast by ppm makes a tone come out lower by ppm (the
// echo is resampled), so two far-apart stretches drift by ppm·distance.
func TestDriftShiftsAlignment(t *testing.T) {
	p, err := New(Config{DelayMS: 50, DriftPPM: 200})
	if err != nil {
		t.Fatal(err)
	}
	far := make([]int16, 16000*10)
	n := NewNoiseMust(t, NoisePink)
	buf := make([]float32, len(far))
	n.Fill(buf)
	for i := range far {
		far[i] = int16(buf[i] * 3000)
	}
	p.Play(0, far, 16000)
	mic := make([]int16, len(far)+2000)
	for off := 0; off < len(mic); off += 320 {
		p.Capture(int64(off), mic[off:min(off+320, len(mic))])
	}
	early := bestLag(far[8000:12000], mic, 8000-100, 8000+1200) - 8000
	late := bestLag(far[148000:152000], mic, 148000-100, 148000+1200) - 148000
	// mic index m reads speaker index m/(1+ppm) - d: lag grows by 200e-6·140000 = 28 samples.
	if got := late - early; got < 26 || got > 30 {
		t.Errorf("drift over 140000 samples: %d samples, want ~28 (early %d late %d)", got, early, late)
	}
}

func NewNoiseMust(t *testing.T, kind string) *Noise {
	n, err := NewNoise(kind, 16000, 1)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNoiseLevels(t *testing.T) {
	for _, k := range []string{NoiseWhite, NoisePink, NoiseMotor, NoiseBabble, NoiseKnocks} {
		p, err := New(Config{EchoGainDB: -40, Noise: k, NoiseDBFS: -30, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		// knocks is unit RMS over a minute, not over seconds.
		secs, tol := 4, 1.5
		if k == NoiseKnocks {
			secs, tol = 60, 2.5
		}
		mic := make([]int16, 16000*secs)
		p.Capture(0, mic)
		db := 20 * math.Log10(rms(mic)/32768)
		if math.Abs(db+30) > tol {
			t.Errorf("%s: %v dBFS over %d s, want -30±%v", k, db, secs, tol)
		}
	}
	if _, err := NewNoise("hiss", 16000, 0); err == nil {
		t.Error("unknown noise kind accepted")
	}
}

func TestSynthIREnergyAndDecay(t *testing.T) {
	p, err := New(Config{RT60: 0.3, DRRDB: 6, EchoGainDB: -3})
	if err != nil {
		t.Fatal(err)
	}
	var e, direct, late float64
	for _, tp := range p.taps {
		v := float64(tp.g) * float64(tp.g)
		e += v
		if tp.k == 0 {
			direct = v
		}
		if tp.k > 16000*0.15 {
			late += v
		}
	}
	if db := 10 * math.Log10(e); math.Abs(db+3) > 0.01 {
		t.Errorf("IR energy %v dB, want -3", db)
	}
	if drr := 10 * math.Log10(direct/(e-direct)); math.Abs(drr-6) > 0.01 {
		t.Errorf("DRR %v dB, want 6", drr)
	}
	// After half the RT60 the tail is 30 dB down: little energy remains.
	if frac := late / (e - direct); frac > 0.01 {
		t.Errorf("tail energy after 150 ms: %v of the reverberation", frac)
	}
}

func TestSoftClipCompressesPeaks(t *testing.T) {
	lin, _ := New(Config{})
	nl, _ := New(Config{SoftClip: 3})
	far := make([]int16, 8000)
	for i := range far {
		far[i] = int16(30000 * math.Sin(2*math.Pi*300*float64(i)/16000))
	}
	a, b := make([]int16, 8000), make([]int16, 8000)
	lin.Play(0, far, 16000)
	nl.Play(0, far, 16000)
	lin.Capture(0, a)
	nl.Capture(0, b)
	if rms(b[1000:]) > 0.6*rms(a[1000:]) {
		t.Errorf("soft clip did not compress: %v vs %v", rms(b[1000:]), rms(a[1000:]))
	}
}

func TestCaptureDoesNotAllocate(t *testing.T) {
	p, _ := New(Moderate())
	far := make([]int16, 480)
	mic := make([]int16, 320)
	var at, mt int64
	allocs := testing.AllocsPerRun(100, func() {
		p.Play(at, far, 24000)
		at += 320
		p.Capture(mt, mic)
		mt += 320
	})
	if allocs > 0 {
		t.Errorf("%v allocs per frame", allocs)
	}
}

func rms(s []int16) float64 {
	var e float64
	for _, v := range s {
		e += float64(v) * float64(v)
	}
	return math.Sqrt(e / float64(len(s)))
}

func bestLag(ref, sig []int16, from, to int) int {
	best, bl := -1.0, 0
	for l := from; l <= to && l+len(ref) <= len(sig); l++ {
		var c, e float64
		for i, v := range ref {
			c += float64(v) * float64(sig[l+i])
			e += float64(sig[l+i]) * float64(sig[l+i])
		}
		if e > 0 && c/math.Sqrt(e) > best {
			best, bl = c/math.Sqrt(e), l
		}
	}
	return bl
}

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestRecordedNoiseLoopsAtUnitRMS(t *testing.T) {
	rec := make([]int16, 3000)
	for i := range rec {
		rec[i] = int16(1000 + 500*math.Sin(2*math.Pi*float64(i)/50)) // DC is removed
	}
	a, err := NewRecordedNoise(rec, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewRecordedNoise(rec, 2)
	if a.Kind() != NoiseRecorded {
		t.Fatalf("kind %q", a.Kind())
	}
	buf, other := make([]float32, 9000), make([]float32, 9000) // three loops
	a.Fill(buf[:1234])
	a.Fill(buf[1234:]) // in two calls: continues where it stopped
	b.Fill(other)
	var ss, mean float64
	same := true
	for i, v := range buf {
		ss += float64(v) * float64(v)
		mean += float64(v)
		if i >= 3000 && v != buf[i-3000] {
			t.Fatalf("sample %d: %v, a loop earlier %v", i, v, buf[i-3000])
		}
		same = same && v == other[i]
	}
	if rms := math.Sqrt(ss / float64(len(buf))); math.Abs(rms-1) > 1e-3 || math.Abs(mean/float64(len(buf))) > 1e-3 {
		t.Fatalf("rms %.4f mean %.4f, want 1 and 0", rms, mean/float64(len(buf)))
	}
	if same {
		t.Fatal("seeds 1 and 2 start at the same position")
	}
	if allocs := testing.AllocsPerRun(10, func() { a.Fill(buf) }); allocs != 0 {
		t.Fatalf("Fill allocates %.0f times", allocs)
	}
	if _, err := NewRecordedNoise(make([]int16, 3000), 1); !errors.Is(err, ErrSilentRecording) {
		t.Fatalf("silent recording: %v", err)
	}
	if _, err := NewRecordedNoise(rec[:100], 1); err == nil {
		t.Fatal("100 samples accepted")
	}
}

// The knocks noise: unit RMS over a minute (±2.5 dB, every seed), its
// events impulsive (peaks 20 dB and more above the RMS, a floor far under
// it between them), one every 0.7..3 s, the same for the same seed.
func TestNoiseKnocks(t *testing.T) {
	const rate = 16000
	for seed := uint64(1); seed <= 20; seed++ {
		n, err := NewNoise(NoiseKnocks, rate, seed)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, rate*60)
		n.Fill(buf[:rate*20])
		n.Fill(buf[rate*20:]) // in pieces, as Capture does
		var ss, peak float64
		for _, v := range buf {
			ss += float64(v) * float64(v)
			peak = math.Max(peak, math.Abs(float64(v)))
		}
		rmsDB := 10 * math.Log10(ss/float64(len(buf)))
		if math.Abs(rmsDB) > 2.5 {
			t.Errorf("seed %d: RMS %.1f dB over a minute, want 0±2.5", seed, rmsDB)
		}
		if p := 20*math.Log10(peak) - rmsDB; p < 20 {
			t.Errorf("seed %d: peak only %.1f dB above the RMS: not impulsive", seed, p)
		}
		// Events: 10 ms blocks 15 dB and more above the floor (the
		// median block), counted once per onset; most blocks are the
		// floor.
		var lv []float64
		for i := 0; i+rate/100 <= len(buf); i += rate / 100 {
			var e float64
			for _, v := range buf[i : i+rate/100] {
				e += float64(v) * float64(v)
			}
			lv = append(lv, 10*math.Log10(e/float64(rate/100)+1e-12))
		}
		floor := slices.Clone(lv)
		slices.Sort(floor)
		med := floor[len(floor)/2]
		var events, quiet int
		loud := false
		for _, db := range lv {
			if math.Abs(db-med) < 3 {
				quiet++
			}
			if db > med+15 && !loud {
				events++
			}
			loud = db > med+10
		}
		if events < 20 || events > 130 {
			t.Errorf("seed %d: %d events in a minute, want one every 0.7..3 s", seed, events)
		}
		if quiet < len(lv)/2 {
			t.Errorf("seed %d: only %d of %d blocks at the floor between events", seed, quiet, len(lv))
		}
		if p := 20*math.Log10(peak) - med; p < 30 {
			t.Errorf("seed %d: peaks only %.1f dB above the floor", seed, p)
		}
	}
	a, b := make([]float32, 4000), make([]float32, 4000)
	n1, _ := NewNoise(NoiseKnocks, rate, 5)
	n2, _ := NewNoise(NoiseKnocks, rate, 5)
	n1.Fill(a)
	n2.Fill(b)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different knocks")
	}
	if testing.AllocsPerRun(10, func() { n1.Fill(a) }) != 0 {
		t.Error("Fill allocates")
	}
}
