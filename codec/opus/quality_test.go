//go:build opus && cgo

package opus

import (
	"math"
	"math/cmplx"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
)

// espeak returns espeak-ng speech at rate, or skips.
func espeak(tb testing.TB, rate int, text string) []int16 {
	tb.Helper()
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		tb.Skip("espeak-ng not installed (scripts/deps.sh installs it)")
	}
	path := filepath.Join(tb.TempDir(), "speech.wav")
	if out, err := exec.Command("espeak-ng", "-s", "160", "-w", path, text).CombinedOutput(); err != nil {
		tb.Fatalf("espeak-ng: %v: %s", err, out)
	}
	a, err := wav.ReadFile(path)
	if err != nil || a.Channels != 1 {
		tb.Fatalf("espeak-ng output: %v", err)
	}
	rs, err := resample.New(a.SampleRate, rate, resample.QualityHigh)
	if err != nil {
		tb.Fatal(err)
	}
	pcm := make([]int16, rs.OutLen(len(a.Samples)))
	return pcm[:rs.Process(pcm, a.Samples)]
}

const speechText = "Hello, I am your robot. The quick brown fox jumps over the lazy dog. " +
	"Please tell me what time it is in Tokyo, and turn on the lights in the kitchen."

// codecRoundTrip encodes and decodes pcm at rate in 20 ms frames and
// returns the output aligned to the input (the codec's delay removed).
func codecRoundTrip(tb testing.TB, pcm []int16, rate, bitrate int) (out []int16, bytes int) {
	pkts := encodeAll(tb, EncoderConfig{SampleRate: rate, Bitrate: bitrate}, append(pcm, make([]int16, rate/10)...))
	dec, _ := NewDecoder(rate)
	buf := make([]int16, dec.MaxSamples())
	for _, p := range pkts {
		n, err := dec.Decode(p, buf)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, buf[:n]...)
		bytes += len(p)
	}
	_, lag := correlationAtBestLag(pcm[:min(len(pcm), rate)], out[:min(len(out), rate+rate/50)], rate/50)
	return out[lag : lag+len(pcm)], bytes
}

// lsd is the log-spectral distance in dB between ref and x: 32 ms Hann
// frames with 50 % overlap, frames where ref is within 40 dB of its
// loudest frame, bins up to maxHz, each spectrum floored 50 dB below the
// reference frame's peak.
func lsd(ref, x []int16, rate, maxHz int) float64 {
	n := 1
	for n < rate*32/1000 {
		n <<= 1
	}
	win := make([]float64, n)
	for i := range win {
		win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
	}
	spec := func(s []int16) []float64 {
		c := make([]complex128, n)
		for i := range c {
			c[i] = complex(float64(s[i])*win[i], 0)
		}
		fft(c)
		p := make([]float64, n/2)
		for i := range p {
			p[i] = real(c[i])*real(c[i]) + imag(c[i])*imag(c[i])
		}
		return p
	}
	type frame struct {
		e    float64
		r, x []float64
	}
	var frames []frame
	maxE := 0.0
	for off := 0; off+n <= len(ref) && off+n <= len(x); off += n / 2 {
		r := spec(ref[off : off+n])
		e := 0.0
		for _, v := range r {
			e += v
		}
		maxE = max(maxE, e)
		frames = append(frames, frame{e, r, spec(x[off : off+n])})
	}
	bins := n / 2 * maxHz * 2 / rate
	sum, cnt := 0.0, 0
	for _, f := range frames {
		if f.e < maxE*1e-4 {
			continue
		}
		// Both spectra floored 50 dB below the reference frame's peak bin:
		// differences in bins the ear cannot hear next to the peak (and
		// that espeak leaves near-empty) do not count.
		peak := 0.0
		for _, v := range f.r {
			peak = max(peak, v)
		}
		floor := peak * 1e-5
		d := 0.0
		for k := 1; k < bins; k++ {
			v := 10 * math.Log10(max(f.r[k], floor)/max(f.x[k], floor))
			d += v * v
		}
		sum += math.Sqrt(d / float64(bins-1))
		cnt++
	}
	return sum / float64(max(cnt, 1))
}

func fft(a []complex128) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for l := 2; l <= n; l <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(l)))
		for i := 0; i < n; i += l {
			wk := complex(1, 0)
			for k := 0; k < l/2; k++ {
				u, v := a[i+k], a[i+k+l/2]*wk
				a[i+k], a[i+k+l/2] = u+v, u-v
				wk *= w
			}
		}
	}
}

func ncc(a, b []int16) float64 {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab, aa, bb = ab+x*y, aa+x*x, bb+y*y
	}
	return ab / math.Sqrt(aa*bb+1e-9)
}

func writeWAV(tb testing.TB, name string, pcm []int16, rate int) {
	dir := filepath.Join("..", "..", "out", "opus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Log(err)
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		tb.Log(err)
		return
	}
	defer f.Close()
	w, _ := wav.NewWriter(f, rate, 1)
	w.Write(pcm)
	w.Close()
}

// TestSpeechQuality: Opus at the default bitrates keeps espeak-ng speech
// close to the original: both directions' log-spectral distance and
// waveform correlation are bounded. (The figures are in BenchmarkSpeechQuality.)
func TestSpeechQuality(t *testing.T) {
	for _, d := range []struct {
		rate, bitrate int
		maxLSD        float64
		minNCC        float64
	}{{16000, DefaultUpBitrate, 6, 0.8}, {24000, DefaultDownBitrate, 6, 0.8}} {
		ref := espeak(t, d.rate, speechText)
		out, bytes := codecRoundTrip(t, ref, d.rate, d.bitrate)
		l, c := lsd(ref, out, d.rate, d.rate/2), ncc(ref, out)
		t.Logf("%d Hz at %d bit/s: %.1f kbit/s actual, LSD %.2f dB, NCC %.3f", d.rate, d.bitrate, float64(bytes*8)/(float64(len(ref))/float64(d.rate))/1000, l, c)
		if l > d.maxLSD || c < d.minNCC {
			t.Errorf("%d Hz: LSD %.2f dB (max %.0f), NCC %.3f (min %.2f)", d.rate, l, d.maxLSD, c, d.minNCC)
		}
	}
}

// BenchmarkSpeechQuality reports, for espeak-ng speech (generated at bench
// time) encoded and decoded at several bitrates in 20 ms frames: the
// bitrate actually produced, the log-spectral distance (dB) and the
// normalised waveform correlation against the PCM original, and writes
// the original and each decoded version to out/opus/*.wav to listen to.
func BenchmarkSpeechQuality(b *testing.B) {
	for _, d := range []struct {
		name          string
		rate, bitrate int
	}{
		{"up16k-12k", 16000, 12000}, {"up16k-16k-default", 16000, DefaultUpBitrate}, {"up16k-24k", 16000, 24000},
		{"down24k-16k", 24000, 16000}, {"down24k-24k-default", 24000, DefaultDownBitrate}, {"down24k-32k", 24000, 32000},
	} {
		b.Run(d.name, func(b *testing.B) {
			ref := espeak(b, d.rate, speechText)
			writeWAV(b, "original-"+itoa(d.rate)+".wav", ref, d.rate)
			var out []int16
			var bytes int
			for i := 0; i < b.N; i++ {
				out, bytes = codecRoundTrip(b, ref, d.rate, d.bitrate)
			}
			writeWAV(b, "decoded-"+d.name+".wav", out, d.rate)
			b.ReportMetric(float64(bytes*8)/(float64(len(ref))/float64(d.rate))/1000, "kbit/s")
			b.ReportMetric(lsd(ref, out, d.rate, d.rate/2), "LSD_dB")
			b.ReportMetric(ncc(ref, out), "NCC")
			b.ReportMetric(float64(len(ref))/float64(d.rate), "speech_s")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
