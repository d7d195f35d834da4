package aec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/room"
)

// DriftFit on synthetic (mic sample, far-end position) pairs every 250 ms:
// jitter of the lag measurements, a fraction of wrong peaks, several clock
// offsets and seeds. The estimate comes within seconds and is close.
func TestDriftFitConverges(t *testing.T) {
	for _, ppm := range []float64{-200, -100, -50, 0, 50, 100, 200} {
		for seed := uint64(1); seed <= 5; seed++ {
			for _, jitter := range []float64{0.05, 0.3} {
				rng := rand.New(rand.NewPCG(seed, 11))
				f := NewDriftFit()
				r := 1 + ppm*1e-6
				y0 := rng.Float64() * 1e6
				var at time.Duration
				for i := range 160 { // 40 s
					x := float64(1e7 + i*driftBlock)
					y := y0 + r*x + rng.NormFloat64()*jitter
					if rng.IntN(10) == 0 {
						y += float64(rng.IntN(200) - 100) // a wrong peak
					}
					f.Add(x, y)
					if _, ok := f.Ratio(); ok && at == 0 {
						at = time.Duration(i+1) * 250 * time.Millisecond
					}
				}
				got, ok := f.Ratio()
				name := fmt.Sprintf("ppm %v seed %d jitter %v", ppm, seed, jitter)
				if !ok {
					t.Errorf("%s: no estimate after 40 s", name)
					continue
				}
				if e := (got - r) * 1e6; math.Abs(e) > 1 {
					t.Errorf("%s: estimate %.2f ppm, error %.2f ppm", name, f.PPM(), e)
				}
				if limit := map[float64]time.Duration{0.05: 4 * time.Second, 0.3: 10 * time.Second}[jitter]; at > limit {
					t.Errorf("%s: first estimate after %v, want within %v", name, at, limit)
				}
			}
		}
	}
}

// Device timing jitter of a millisecond (16 samples) is far too much for a
// fit over 20 s to reach the accuracy asked: no estimate is made rather
// than a wrong one.
func TestDriftFitRefusesWhatItCannotResolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	f := NewDriftFit()
	for i := range 400 {
		x := float64(i * driftBlock)
		f.Add(x, x*(1+100e-6)+rng.NormFloat64()*16)
	}
	if r, ok := f.Ratio(); ok {
		t.Errorf("an estimate (%.1f ppm, %.1f ppm off) from 16-sample jitter", (r-1)*1e6, (r-1-100e-6)*1e6)
	}
}

// A step in the far-end timeline (re-anchored after an underflow) restarts
// the fit; the ratio is kept meanwhile and found again.
func TestDriftFitStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	f := NewDriftFit()
	r := 1 - 100e-6
	step := 0.0
	for i := range 200 {
		if i == 100 {
			step = 640
		}
		x := float64(i * driftBlock)
		f.Add(x, r*x+step+rng.NormFloat64()*0.1)
		if i > 100 && i < 110 {
			if got, ok := f.Ratio(); !ok || math.Abs(got-r)*1e6 > 1 {
				t.Fatalf("point %d after the step: ratio %v %v, want the previous estimate kept", i, got, ok)
			}
		}
	}
	got, ok := f.Ratio()
	if !ok || math.Abs(got-r)*1e6 > 0.5 {
		t.Fatalf("after the step: ratio %v (%v), want %v", got, ok, r)
	}
	if len(f.x) > 100 {
		t.Errorf("window holds %d points: the step did not restart it", len(f.x))
	}
}

// At integer positions the fractional reader returns the ring unchanged; at
// fractional ones it delays a tone by the fraction with the right gain, up
// to 6.4 kHz.
func TestFracReaderResponse(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, Rate)
	fr := newFracReader()
	for ph := range fracPhases + 1 {
		var s float64
		for _, v := range fr.tab[ph] {
			s += float64(v)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Fatalf("phase %d: DC gain %v", ph, s)
		}
	}
	for _, hz := range []float64{200, 1000, 3000, 5000, 6400} {
		sig := make([]int16, Rate)
		for i := range sig {
			sig[i] = int16(10000 * math.Sin(2*math.Pi*hz*float64(i)/Rate))
		}
		ref2, _ := NewReference(clk, Rate)
		ref2.started.Store(true)
		copy(ref2.ring, sig)
		ref2.written.Store(int64(len(sig)))
		got := make([]int16, FrameSamples)
		for _, frac := range []float64{0, 0.25, 0.5, 0.77} {
			base := int64(4000)
			fr.read(ref2, got, base, frac, 1)
			var e float64
			for i, v := range got {
				want := 10000 * math.Sin(2*math.Pi*hz*(float64(base)+frac+float64(i))/Rate)
				e = max(e, math.Abs(float64(v)-want))
			}
			// 0.1 dB of 10000 is 115; rounding 0.5.
			if e > 115 {
				t.Errorf("%v Hz at fraction %v: max error %.0f of 10000", hz, frac, e)
			}
		}
	}
	_ = ref
}

// echoRig drives a Source the way the agent is wired: the speaker tap
// records the far end, a simulated room (with a clock offset between the
// speaker and the mic) makes the echo, the Source reads the mic.
type echoRig struct {
	clk  *clock.Fake
	path *room.Path
	tap  *Tap
	far  []int16 // 24 kHz, current block
	rng  *rand.Rand
	lvl  float64
	left int
	at   int64
}

func (r *echoRig) Format() hw.AudioFormat { return hw.MicFormat }
func (r *echoRig) Close() error           { return nil }

// Read plays a 20 ms block of speech-like bursts and captures the mic.
func (r *echoRig) Read(dst []int16) (int, error) {
	for i := range r.far {
		if r.left == 0 {
			r.left = 2400 + r.rng.IntN(12000)
			r.lvl = 0
			if r.rng.IntN(4) > 0 {
				r.lvl = 1000 + 5000*r.rng.Float64()
			}
		}
		r.left--
		r.far[i] = int16(r.lvl * (r.rng.Float64()*2 - 1))
	}
	r.tap.Write(r.far)
	r.path.Play(r.at, r.far, 24000)
	clear(dst)
	r.path.Capture(r.at, dst)
	r.at += int64(len(dst))
	r.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	return len(dst), nil
}

type latSpk struct{ nullSpk }

func (latSpk) DeviceLatency() time.Duration { return 20 * time.Millisecond }

// The Source finds the clock offset the room simulates from the echo and
// compensates it: the estimate is close within seconds, for offsets of
// both signs up to 200 ppm, on several rooms (seeds), and the far end is
// not moved meanwhile.
func TestSourceCompensatesDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated room")
	}
	for _, ppm := range []float64{-200, -50, 0, 100, 200} {
		for seed := uint64(1); seed <= 2; seed++ {
			clk := clock.NewFake()
			ref, _ := NewReference(clk, 24000)
			p, err := room.New(room.Config{DelayMS: 40 + 20*float64(seed), EchoGainDB: -6, RT60: 0.2, DRRDB: 6, DriftPPM: ppm,
				Noise: room.NoisePink, NoiseDBFS: -55, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			rig := &echoRig{clk: clk, path: p, far: make([]int16, 480), rng: rand.New(rand.NewPCG(seed, 1))}
			rig.tap = NewTap(latSpk{}, ref, clk)
			s := NewSource(rig, ref, &scaler{gain: 1}, clk, SourceConfig{DriftCompensation: true, MarginMS: 48})
			frame := make([]int16, 320)
			var at time.Duration
			for i := range 12 * 50 { // 12 s
				s.Read(frame)
				if at == 0 && s.driftPPM.Load() != 0 {
					at = time.Duration(i+1) * 20 * time.Millisecond
				}
			}
			name := fmt.Sprintf("%v ppm seed %d", ppm, seed)
			if got := s.DriftPPM(); math.Abs(got-ppm) > 3 || at == 0 && ppm != 0 {
				t.Errorf("%s: compensating %.1f ppm (first estimate after %v)", name, got, at)
			}
			if at > 6*time.Second {
				t.Errorf("%s: first estimate after %v", name, at)
			}
			if s.Shifts() > 1 {
				t.Errorf("%s: far end moved %d times", name, s.Shifts())
			}
			if ppm == -200 && seed == 1 {
				// Measuring, fitting and resampling allocate nothing.
				n0 := s.drift.measured
				if a := testing.AllocsPerRun(100, func() { s.Read(frame) }); a != 0 {
					t.Errorf("%v allocs per 20 ms read with drift compensation", a)
				}
				if s.drift.measured == n0 {
					t.Errorf("no lag measured during the allocation test")
				}
			}
			t.Logf("%s: %.2f ppm after 12 s, first estimate after %v, %d lag measurements", name, s.DriftPPM(), at, s.drift.measured)
		}
	}
}

// Finding the clock offset moves the double-talk threshold from the fixed
// one to the canceller's measured reduction less the margin; the
// reduction measured before it is the drifting path's (mostly while the
// canceller converged), so the threshold restarts from the fixed one and
// rises as the canceller shows its reduction after the lock: a canceller
// that gave 40 dB while converging but 25 dB once locked does not have
// its 25 dB reads taken for the user, nor does one read the suppressor
// silenced raise the threshold at once.
func TestAdaptiveGuardRelearnsAfterTheDriftLock(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &scaler{}
	tap := NewTap(nullSpk{}, ref, clk)
	s := NewSource(&noiseMic{clk: clk, rng: rand.New(rand.NewPCG(1, 2))}, ref, c, clk, SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10, DriftCompensation: true})
	rng := rand.New(rand.NewPCG(2, 2))
	blk, frame := make([]int16, 480), make([]int16, 320)
	read := func(reductionDB float64) bool {
		c.gain = math.Pow(10, -reductionDB/20)
		for i := range blk {
			blk[i] = int16(rng.IntN(8000) - 4000)
		}
		tap.Write(blk)
		s.Read(frame)
		return s.EchoDominated()
	}
	for range 300 {
		read(40)
	}
	s.drift.fit.have = true // the estimate
	// The first read after it all suppressed (60 dB), the rest 25 dB: no
	// single read sets the threshold.
	read(60)
	for i := range 150 {
		if !read(25) {
			t.Fatalf("read %d after the lock: 25 dB reduced passed as the user (guard %.1f dB)", i, s.GuardDB())
		}
	}
	if g := s.GuardDB(); g < 13 || g > 17 {
		t.Errorf("150 reads after the lock: guard %.1f dB, want about 25 - 10 (the reduction measured since)", g)
	}
}

// With the estimator, an echo sooner than the main canceller's lead: the
// Source tells a dual-path canceller the far end's actual lead, so its
// linear filter gets the far end before the echo, not after it.
func TestSourceTellsTheLinearFilterASoonEcho(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	p, err := room.New(room.Config{DelayMS: 20, EchoGainDB: -6, RT60: 0.2, DRRDB: 6, Noise: room.NoisePink, NoiseDBFS: -55, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rig := &echoRig{clk: clk, path: p, far: make([]int16, 480), rng: rand.New(rand.NewPCG(1, 1))}
	rig.tap = NewTap(latSpk{}, ref, clk)
	d := newDual(&leadScaler{scaler{gain: 1, lead: 48}}, &passFilter{}, false)
	s := NewSource(rig, ref, d, clk, SourceConfig{})
	frame := make([]int16, 320)
	for range 8 * 50 { // 8 s
		s.Read(frame)
	}
	est, ok := s.est.Delay()
	if !ok || est >= 40*Rate/1000 {
		t.Fatalf("estimated delay %d samples (found %v): the test needs an echo sooner than 40 ms", est, ok)
	}
	// The linear filter's far end leads the echo by est - bulk - delay.
	if lead := est - s.bulk - d.delay; lead < 0 || lead > (defaultMarginMS+shrinkTolMS)*Rate/1000 {
		t.Errorf("echo %.1f ms after the far end: the linear filter gets the far end %.1f ms before it (line %.1f ms), want 0..%d ms",
			float64(est)*1000/Rate, float64(lead)*1000/Rate, float64(d.delay)*1000/Rate, defaultMarginMS+shrinkTolMS)
	}
}

// With the far end read at a compensated ratio, the mic's sample count
// slides against its timestamps by the clock offset (here: timestamps on
// the speaker's clock, 200 ppm over 10 minutes = 120 ms): that is no
// reason to re-anchor the timeline (each re-anchoring moves the far end
// against the echo), while a sudden jump of the timestamps still is.
func TestCompensatedTimelineDoesNotReanchorOnDrift(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	tap := NewTap(latSpk{}, ref, clk)
	s := NewSource(fakeMic{clk}, ref, &scaler{gain: 1}, clk, SourceConfig{DriftCompensation: true, FixedDelayMS: 60})
	s.ratio = 1 - 200e-6
	blk, frame := make([]int16, 480), make([]int16, 320)
	for range 10 * 60 * 50 {
		tap.Write(blk)
		s.Read(frame)
	}
	if s.anchors != 1 {
		t.Errorf("timeline anchored %d times in 10 minutes of 200 ppm slide, want once", s.anchors)
	}
	clk.Advance(100 * time.Millisecond) // the mic lost 100 ms
	tap.Write(blk)
	s.Read(frame)
	if s.anchors != 2 {
		t.Errorf("a 100 ms jump of the timestamps: anchored %d times, want 2", s.anchors)
	}
}

// With drift compensation the adaptive guard waits for the clock offset:
// until it is found the threshold is the fixed double_talk_db.
func TestAdaptiveGuardWaitsForTheDriftEstimate(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &scaler{gain: math.Pow(10, -30.0/20)}
	tap := NewTap(nullSpk{}, ref, clk)
	s := NewSource(&noiseMic{clk: clk, rng: rand.New(rand.NewPCG(1, 2))}, ref, c, clk, SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10, DriftCompensation: true})
	rng := rand.New(rand.NewPCG(2, 2))
	blk, frame := make([]int16, 480), make([]int16, 320)
	for range 300 {
		for i := range blk {
			blk[i] = int16(rng.IntN(8000) - 4000)
		}
		tap.Write(blk)
		s.Read(frame)
	}
	if g := s.GuardDB(); g != DefaultDoubleTalkDB {
		t.Fatalf("no drift estimate yet: guard %.1f dB, want the fixed %v", g, DefaultDoubleTalkDB)
	}
	s.drift.fit.have = true // an estimate (1.0: one clock)
	// 2 s: from the fixed threshold up to the measured reduction.
	for range 100 {
		tap.Write(blk)
		s.Read(frame)
	}
	if g := s.GuardDB(); g < 17 || g > 21 {
		t.Errorf("with the drift estimate: guard %.1f dB, want about 30 - 10", g)
	}
}

// noiseMic captures noise unrelated to the far end.
type noiseMic struct {
	clk *clock.Fake
	rng *rand.Rand
}

func (m *noiseMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m *noiseMic) Close() error           { return nil }
func (m *noiseMic) Read(dst []int16) (int, error) {
	m.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	for i := range dst {
		dst[i] = int16(m.rng.IntN(8000) - 4000)
	}
	return len(dst), nil
}

// voiced is a far end like a voice (and hw/sim's speech): harmonics of a
// pitch gliding 135-185 Hz, in syllables. Its echo's correlation with it
// has a peak one pitch period (~6 ms) either side of the echo's lag too.
func voiced(n int, rng *rand.Rand) []int16 {
	out := make([]int16, n)
	phase := 0.0
	for i := range out {
		t := float64(i) / Rate
		f0 := 160 + 25*math.Sin(2*math.Pi*0.8*t)
		phase += 2 * math.Pi * f0 / Rate
		v := harmonics(phase)
		syl := math.Abs(math.Sin(math.Pi * 4 * t))
		out[i] = int16(3000*syl*v + 30*rng.NormFloat64())
	}
	return out
}

// harmonics is a pitched tone at phase: ten harmonics falling 6 dB per
// octave.
func harmonics(phase float64) float64 {
	var v float64
	for k := 1; k <= 10; k++ {
		v += math.Sin(float64(k)*phase) / float64(k)
	}
	return v
}

// The coarse delay estimator's lag is 7 ms off the echo's (as in `make
// run`: 46 ms for an echo at 39 ms). The drift meter searches wide around
// it until a block measures, so every lag it measures is the echo's, not
// a peak one pitch period off, and the clock offset is found within the
// first seconds of voice. (With a search of ±4 ms around that lag it
// measured the pitch-period peak, 87-117 samples off, wandering with the
// pitch; the fit took those points and found no offset in 8 s.)
func TestDriftMeterFindsTheEchoFarFromTheCoarseLag(t *testing.T) {
	const lag, hint = 624, 736
	rng := rand.New(rand.NewPCG(1, 2))
	far := voiced(8*Rate+lag, rng)
	d := newDriftMeter()
	mic := make([]int16, FrameSamples)
	for off := lag; off+FrameSamples <= len(far); off += FrameSamples {
		for i := range mic {
			mic[i] = far[off+i-lag]/2 + int16(20*rng.NormFloat64())
		}
		// Far-end positions on the mic's count (its first sample is 0).
		d.push(far[off:off+FrameSamples], mic, float64(off-lag), 1, hint)
	}
	if d.measured < 10 {
		t.Fatalf("%d lags measured in 8 s of voice, want 10 or more", d.measured)
	}
	for i, y := range d.fit.y {
		// y is the far-end position the mic heard minus the mic sample: -lag.
		if math.Abs(y+lag) > 2 {
			t.Errorf("measurement %d: lag %.1f samples, want %d", i, -y, lag)
		}
	}
	if r, ok := d.fit.Ratio(); !ok || math.Abs(r-1)*1e6 > 5 {
		t.Errorf("clock offset %.1f ppm (found %v), want 0 ± 5", (r-1)*1e6, ok)
	}
}

// The points of a `make run` start whose fit found no clock offset (a
// print of the drift meter): four blocks at a pitch-period peak, two at
// the echo, three of a tone, then the echo's line at -50 ppm. Seven of
// the first ten were wrong, and the line through them (3918 ppm, its
// slope's standard error 843 ppm) rejected every later point; now a line
// that is not credible rejects nothing, and the offset is found.
func TestDriftFitRecoversFromAWrongStart(t *testing.T) {
	f := NewDriftFit()
	for i, v := range []float64{-630.886, -630.981, -631.055, -631.342, -574.631, -574.874, -527.230, -502.910, -557.872} {
		x := 62000 + 4000*float64(i)
		f.Add(x, x+v)
	}
	found := -1
	for i := range 40 {
		x := 142000 + 4000*float64(i)
		f.Add(x, x-577.809-50e-6*(x-142000))
		if _, ok := f.Ratio(); ok && found < 0 {
			found = i
		}
	}
	r, ok := f.Ratio()
	if !ok || found > 16 {
		t.Fatalf("clock offset found after %d points of the echo's line (%v), want within 16 (4 s)", found, ok)
	}
	if ppm := (r - 1) * 1e6; math.Abs(ppm+50) > 2 {
		t.Errorf("clock offset %.1f ppm, want -50 ± 2", ppm)
	}
}

// A far end with a steady pitch (a chime, a sung note, a hum) correlates
// with its echo one period off as well as at the echo's lag, and which
// peak wins a block is chance. Such blocks measure nothing; a voice,
// whose pitch moves, still measures. (Without the test for a second peak
// every one of the 31 lags measured on the steady tone was more than 4
// samples off, in every room seed: enough wrong points to keep the clock
// offset from being found, as the reply's tone held it back in `make
// run`.)
func TestDriftMeterIgnoresBlocksWithTwoPeaks(t *testing.T) {
	const lag, n = 640, 8 * Rate
	for seed := uint64(1); seed <= 3; seed++ {
		steady := make([]int16, n)
		ph, f0 := 0.0, 150+10*float64(seed)
		for i := range steady {
			ph += 2 * math.Pi * f0 / Rate
			steady[i] = int16(3000 * harmonics(ph))
		}
		voice := voiced(n, rand.New(rand.NewPCG(seed, 9)))
		for _, c := range []struct {
			name    string
			far     []int16
			atLeast int
		}{{"steady pitch", steady, 0}, {"voice", voice, 10}} {
			p, err := room.New(room.Config{DelayMS: lag * 1000 / Rate, EchoGainDB: -6, RT60: 0.3, DRRDB: 6, Noise: room.NoisePink, NoiseDBFS: -60, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			mic := echoOf(p, c.far)
			d := newDriftMeter()
			for off := 0; off+FrameSamples <= n; off += FrameSamples {
				// The coarse lag 7 ms off, as in `make run`.
				d.push(c.far[off:off+FrameSamples], mic[off:off+FrameSamples], float64(off), 1, lag+112)
			}
			wrong := 0
			for _, y := range d.fit.y {
				if math.Abs(y+lag) > 4 {
					wrong++
				}
			}
			if wrong > 0 || d.measured < c.atLeast {
				t.Errorf("seed %d, %s: %d of %d lags measured more than 4 samples off the echo's (want 0), want %d or more measured",
					seed, c.name, wrong, d.measured, c.atLeast)
			}
		}
	}
}

// echoOf plays far (16 kHz) through p from sample 0 and returns what the
// mic captures meanwhile, read in frames as a device would (the room's mic
// ring holds seconds, not the whole signal).
func echoOf(p *room.Path, far []int16) []int16 {
	p.Play(0, far, Rate)
	mic := make([]int16, len(far))
	for off := 0; off < len(mic); off += FrameSamples {
		p.Capture(int64(off), mic[off:min(off+FrameSamples, len(mic))])
	}
	return mic
}
