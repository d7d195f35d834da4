package vad

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

func TestFFTMatchesDFT(t *testing.T) {
	for _, n := range []int{2, 16, 512} {
		f := newFFT(n)
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		x := make([]complex128, n)
		re, im := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
			re[i], im[i] = real(x[i]), imag(x[i])
		}
		f.transform(re, im)
		for k := range n {
			var want complex128
			for j, v := range x {
				want += v * cmplx.Exp(complex(0, -2*math.Pi*float64(k*j)/float64(n)))
			}
			if d := cmplx.Abs(want - complex(re[k], im[k])); d > 1e-9*float64(n) {
				t.Fatalf("n=%d bin %d: got %v, want %v", n, k, complex(re[k], im[k]), want)
			}
		}
	}
}

// pinkGen is Kellet's pink-noise filter on white Gaussian noise (unit RMS
// approximately).
type pinkGen struct {
	rng        *rand.Rand
	b0, b1, b2 float64
}

func (p *pinkGen) next() float64 {
	w := p.rng.NormFloat64()
	p.b0 = 0.99765*p.b0 + w*0.0990460
	p.b1 = 0.96300*p.b1 + w*0.2965164
	p.b2 = 0.57000*p.b2 + w*1.0526913
	return (p.b0 + p.b1 + p.b2 + w*0.1848) / 3.1
}

// syllables returns n samples of a vowel-like signal: a harmonic series on
// a gliding F0 shaped by two formants, in syllables of sylMS separated by
// gapMS of silence, at unit peak amplitude, plus the truth per 20 ms frame:
// 1 for frames inside a syllable's core (envelope within 20 dB of its
// peak), 0 for frames of the gap more than 100 ms after a syllable (a
// detector's hangover may cover what comes before), -1 in between (not
// counted).
func syllables(n int, f0, sylMS, gapMS float64, rng *rand.Rand) ([]float64, []int) {
	out := make([]float64, n)
	period := int((sylMS + gapMS) * 16)
	syl := int(sylMS * 16)
	var ph float64
	f1, f2 := 500+300*rng.Float64(), 1200+1000*rng.Float64()
	gains := make([]float64, 64)
	for blk := 0; blk < n; blk += 160 {
		f := f0 * (1 + 0.1*math.Sin(2*math.Pi*float64(blk)/16000*1.5))
		nh := min(int(4000/f), len(gains))
		for h := 1; h <= nh; h++ {
			hf := float64(h) * f
			gains[h-1] = 1/(1+math.Pow((hf-f1)/150, 2)) + 0.5/(1+math.Pow((hf-f2)/200, 2)) + 0.02
		}
		for i := blk; i < min(blk+160, n); i++ {
			ph += 2 * math.Pi * f / 16000
			pos := i % period
			if pos >= syl {
				continue
			}
			env := math.Sin(math.Pi * float64(pos) / float64(syl))
			var v float64
			for h := 1; h <= nh; h++ {
				v += gains[h-1] * math.Sin(float64(h)*ph)
			}
			out[i] = env * v
		}
	}
	var peak float64
	for _, v := range out {
		peak = max(peak, math.Abs(v))
	}
	truth := make([]int, n/320)
	for k := range truth {
		mid := (k*320 + 160) % period
		switch {
		case mid < syl && math.Sin(math.Pi*float64(mid)/float64(syl)) > 0.1:
			truth[k] = 1
		case mid >= syl+100*16:
			truth[k] = 0
		default:
			truth[k] = -1
		}
	}
	for i := range out {
		out[i] /= peak
	}
	return out, truth
}

// mix returns voice scaled so that its RMS over speech frames is at
// levelDB dBFS plus pink noise at levelDB-snrDB dBFS.
func mix(voice []float64, truth []int, levelDB, snrDB float64, seed uint64) []int16 {
	g := 32768 * math.Pow(10, levelDB/20) / rmsOf(voice, truth)
	gn := 32768 * math.Pow(10, (levelDB-snrDB)/20)
	p := pinkGen{rng: rand.New(rand.NewPCG(seed, 7))}
	out := make([]int16, len(voice))
	for i, v := range voice {
		out[i] = int16(max(min(v*g+p.next()*gn, 32767), -32768))
	}
	return out
}

// On generated vowel-like syllables in pink noise the spectral detector
// finds most syllable frames and few noise frames, at several SNRs, F0s
// and seeds; the energy detector (the baseline) is checked to be worse in
// the same run at 5 dB, so the scene is a hard one.
func TestSpectralFindsSyllablesInPinkNoise(t *testing.T) {
	for _, tc := range []struct {
		snr, minRecall, maxFPR float64
	}{{20, 0.95, 0.03}, {10, 0.9, 0.03}, {5, 0.8, 0.03}} {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, 3))
			f0 := 100 + 150*rng.Float64()
			lead := make([]float64, 2*16000) // 2 s of noise first
			v, truth := syllables(5*16000, f0, 180+100*rng.Float64(), 250+300*rng.Float64(), rng)
			voice := append(lead, v...)
			truth = append(make([]int, 100), truth...)
			mic := mix(voice, truth, -25, tc.snr, seed)
			rate := func(d Detector) (recall, fpr float64) {
				var tp, fn, fp, tn int
				for k, on := range truth {
					s := d.Speech(mic[k*320:(k+1)*320], false)
					if k < 100 { // learning the noise
						continue
					}
					switch {
					case on < 0:
					case s && on == 1:
						tp++
					case s:
						fp++
					case on == 1:
						fn++
					default:
						tn++
					}
				}
				return float64(tp) / float64(tp+fn), float64(fp) / float64(fp+tn)
			}
			r, f := rate(NewSpectral(SpectralConfig{}))
			t.Logf("SNR %v dB seed %d: recall %.3f, false positives %.3f", tc.snr, seed, r, f)
			if r < tc.minRecall || f > tc.maxFPR {
				t.Errorf("SNR %v dB seed %d (F0 %.0f Hz): recall %.2f (want >= %.2f), false positives %.1f %% (want <= %.0f %%)", tc.snr, seed, f0, r, tc.minRecall, 100*f, 100*tc.maxFPR)
			}
			if tc.snr == 5 {
				er, _ := rate(NewEnergy(EnergyConfig{}, 20))
				if er >= r {
					t.Errorf("SNR 5 dB seed %d: energy recall %.2f >= spectral %.2f: the scene does not discriminate", seed, er, r)
				}
			}
		}
	}
}

// noiseFrames feeds n frames of pink noise at dbfs and counts speech calls.
func noiseFrames(d Detector, p *pinkGen, n int, dbfs float64, buf []int16) int {
	g := 32768 * math.Pow(10, dbfs/20)
	var c int
	for range n {
		for i := range buf {
			buf[i] = int16(max(min(p.next()*g, 32767), -32768))
		}
		if d.Speech(buf, false) {
			c++
		}
	}
	return c
}

// After the room gets 10 dB louder (a fan starts) the detector calls the
// new noise speech for at most about 2–3 s (the MCRA minimum window and
// the noise average catching up), and a stationary tone added to the
// noise becomes noise too.
func TestSpectralFollowsTheNoise(t *testing.T) {
	d := NewSpectral(SpectralConfig{})
	p := &pinkGen{rng: rand.New(rand.NewPCG(5, 5))}
	buf := make([]int16, 320)
	if n := noiseFrames(d, p, 150, -50, buf); n > 3 {
		t.Errorf("steady noise: %d/150 frames speech", n)
	}
	noiseFrames(d, p, 150, -40, buf) // 3 s to adapt
	if n := noiseFrames(d, p, 150, -40, buf); n > 3 {
		t.Errorf("louder noise after 3 s: %d/150 frames speech", n)
	}
	// A steady 1 kHz hum appears.
	var ph float64
	tone := 0
	for k := range 400 {
		for i := range buf {
			ph += 2 * math.Pi * 1000 / 16000
			buf[i] = int16(p.next()*328 + 1500*math.Sin(ph))
		}
		if d.Speech(buf, false) && k >= 250 {
			tone++
		}
	}
	if tone > 3 {
		t.Errorf("steady tone after 5 s: %d/150 frames speech", tone)
	}
}

// SetAdapt(false) keeps the noise estimate while the echo canceller's
// suppressor hides the room noise; without it the noise coming back is
// taken for speech (the failure the hold prevents, checked in the same
// run).
func TestSpectralSetAdaptHoldsTheNoise(t *testing.T) {
	run := func(hold bool) int {
		d := NewSpectral(SpectralConfig{MinFloorDBFS: -100})
		p := &pinkGen{rng: rand.New(rand.NewPCG(9, 9))}
		buf := make([]int16, 320)
		noiseFrames(d, p, 200, -45, buf)
		d.SetAdapt(!hold)
		noiseFrames(d, p, 150, -85, buf) // suppressed: 40 dB below the room
		d.SetAdapt(true)
		return noiseFrames(d, p, 100, -45, buf)
	}
	held, free := run(true), run(false)
	if held > 2 {
		t.Errorf("held: %d/100 frames of returning noise called speech", held)
	}
	if free < 10 {
		t.Errorf("not held: only %d/100 frames of returning noise called speech; the test does not show the hold's effect", free)
	}
}

// Odd input: digital silence, DC offsets, full-scale clipping, odd frame
// lengths. No NaN, no speech on silence or DC, and back to non-speech
// after a burst of clipping.
func TestSpectralOddInput(t *testing.T) {
	zero := make([]int16, 320)
	for _, offset := range []int16{12000, -20000} {
		dc := NewSpectral(SpectralConfig{})
		rng := rand.New(rand.NewPCG(2, uint64(offset)))
		f := make([]int16, 320)
		for k := range 150 {
			for i := range f {
				f[i] = offset + int16(30*rng.NormFloat64())
			}
			if dc.Speech(f, false) {
				t.Fatalf("noise on a DC offset of %d called speech at frame %d", offset, k)
			}
		}
	}
	d := NewSpectral(SpectralConfig{})
	for range 100 {
		if d.Speech(zero, false) {
			t.Fatal("digital silence called speech")
		}
	}
	if d.Speech(nil, false) {
		t.Error("empty frame called speech")
	}
	clip := make([]int16, 320)
	for k := range 50 {
		for i := range clip {
			clip[i] = 32767
			if (i/20+k)%2 == 1 {
				clip[i] = -32768
			}
		}
		d.Speech(clip, false)
		if p := d.Probability(); math.IsNaN(p) || p < 0 || p > 1 || math.IsNaN(d.LLR()) {
			t.Fatalf("clipping: probability %v, LLR %v", p, d.LLR())
		}
	}
	var speech int
	for k := range 300 {
		if d.Speech(zero[:7+k%300], false) && k > 150 {
			speech++
		}
	}
	if speech > 0 {
		t.Errorf("silence after clipping: %d frames speech after 1.5 s", speech)
	}
}

// Every frame length gives the same decisions per 10 ms hop.
func TestSpectralFrameLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	v, truth := syllables(4*16000, 150, 200, 300, rng)
	mic := mix(v, truth, -25, 10, 4)
	ref := NewSpectral(SpectralConfig{})
	want := make([]bool, len(mic)/160)
	for h := range want {
		want[h] = ref.Speech(mic[h*160:(h+1)*160], false)
	}
	for _, n := range []int{160, 320, 480, 640, 960, 37} {
		d := NewSpectral(SpectralConfig{})
		for off := 0; off+n <= len(mic); off += n {
			got := d.Speech(mic[off:off+n], false)
			// hops completed by this call: h with (h+1)*160 in (off, off+n]
			lo, hi := off/160, (off+n)/160-1
			var w bool
			if hi < lo {
				w = lo > 0 && want[lo-1]
			}
			for h := lo; h <= hi; h++ {
				w = w || want[h]
			}
			if got != w {
				t.Fatalf("frame %d samples at %d: %v, want %v", n, off, got, w)
			}
		}
	}
}

// The decision hangover extends exactly the runs of at least 50 ms of
// speech by HangoverMS (cut short by the next run), and nothing else: on
// pink noise with tone bursts of 10–200 ms at random levels, the 10 ms
// decisions with HangoverMS 50 are those without it passed through the
// GSM 06.32 burst/hangover rule.
func TestSpectralHangoverFollowsBursts(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := &pinkGen{rng: rand.New(rand.NewPCG(seed, 8))}
		const hops = 3000 // 30 s of 10 ms frames
		in := make([]int16, hops*specHop)
		var ph float64
		for k := 0; k < len(in); {
			gap := (20 + rng.IntN(60)) * specHop
			for i := k; i < min(k+gap, len(in)); i++ {
				in[i] = int16(p.next() * 300)
			}
			k += gap
			burst := (1 + rng.IntN(20)) * specHop
			amp := 100 + 1500*rng.Float64()
			for i := k; i < min(k+burst, len(in)); i++ {
				ph += 2 * math.Pi * 180 / 16000
				in[i] = int16(p.next()*300 + amp*(math.Sin(ph)+0.5*math.Sin(3*ph)))
			}
			k += burst
		}
		plain, hang := NewSpectral(SpectralConfig{}), NewSpectral(SpectralConfig{HangoverMS: 50})
		var burst, left, short, long, extended int
		for k := range hops {
			f := in[k*specHop : (k+1)*specHop]
			a, b := plain.Speech(f, false), hang.Speech(f, false)
			want := a
			if a {
				burst++
				if burst >= 5 {
					left = 5
				}
			} else {
				switch {
				case burst >= 5:
					long++
				case burst > 0:
					short++
				}
				burst = 0
				if left > 0 {
					left--
					want = true
					extended++
				}
			}
			if b != want {
				t.Fatalf("seed %d hop %d: speech %v with the hangover, want %v (without: %v)", seed, k, b, want, a)
			}
		}
		t.Logf("seed %d: %d runs of >= 50 ms, %d shorter, %d hops extended", seed, long, short, extended)
		if long == 0 || short == 0 || extended == 0 {
			t.Errorf("seed %d: %d long runs, %d short runs, %d extended hops: the scene does not test the rule", seed, long, short, extended)
		}
	}
}

func TestSpectralDoesNotAllocate(t *testing.T) {
	for _, kind := range []string{KindSpectral, KindVoiced} {
		for _, ms := range []int{10, 20, 30, 40, 60} {
			for _, hang := range []int{0, 50} {
				d, err := New(Options{Kind: kind, FrameMS: ms, Mode: hang, FastOnset: hang > 0})
				if err != nil {
					t.Fatal(err)
				}
				f := tone(16*ms, 3000)
				if a := testing.AllocsPerRun(100, func() { d.Speech(f, false) }); a != 0 {
					t.Errorf("%s, %d ms frames, hangover %d ms: %v allocs per frame", kind, ms, hang, a)
				}
			}
		}
	}
}

func FuzzSpectral(f *testing.F) {
	f.Add([]byte{0, 0, 255, 127}, uint8(20))
	f.Add(make([]byte, 2000), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		c := SpectralConfig{}
		if chunk&1 == 1 {
			c.Voicing, c.VoicingMargin = voicedWeight, voicedMargin
		}
		d := NewSpectral(c)
		s := make([]int16, len(b)/2)
		for i := range s {
			s[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		n := int(chunk)%700 + 1
		for len(s) > 0 {
			k := min(n, len(s))
			d.Speech(s[:k], false)
			s = s[k:]
			if p := d.Probability(); math.IsNaN(p) || p < 0 || p > 1 {
				t.Fatalf("probability %v", p)
			}
			if v := d.Voicing(); math.IsNaN(v) || v < 0 || v > 1 {
				t.Fatalf("voicing score %v", v)
			}
		}
	})
}

func ExampleSpectral() {
	d := NewSpectral(SpectralConfig{})
	p := &pinkGen{rng: rand.New(rand.NewPCG(1, 1))}
	frame := make([]int16, 320) // 20 ms at 16 kHz
	count := func(voice bool) (n int) {
		var ph float64
		for range 50 {
			for i := range frame {
				s := p.next() * 300 // room noise, about -40 dBFS
				if voice {
					ph += 2 * math.Pi * 160 / 16000
					for h := 1; h <= 20; h++ {
						s += 600 / float64(h) * math.Sin(float64(h)*ph)
					}
				}
				frame[i] = int16(s)
			}
			if d.Speech(frame, false) {
				n++
			}
		}
		return n
	}
	fmt.Println("noise:", count(false), "of 50 frames speech")
	fmt.Println("voice:", count(true), "of 50 frames speech")
	fmt.Println("noise:", count(false), "of 50 frames speech")
	// Output:
	// noise: 0 of 50 frames speech
	// voice: 49 of 50 frames speech
	// noise: 4 of 50 frames speech
}
