//go:build opus && cgo

package opus

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/robot-agent/robot-agent/codec/quality"
)

// espeak returns espeak-ng speech at rate, or skips.
func espeak(tb testing.TB, rate int, text string) []int16 {
	tb.Helper()
	pcm, err := quality.Speech(text, rate)
	if errors.Is(err, quality.ErrNoSpeechSynth) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return pcm
}

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

func writeWAV(tb testing.TB, name string, pcm []int16, rate int) {
	if err := quality.WriteWAV(filepath.Join("..", "..", "out", "opus", name), pcm, rate); err != nil {
		tb.Log(err)
	}
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
		ref := espeak(t, d.rate, quality.SpeechText)
		out, bytes := codecRoundTrip(t, ref, d.rate, d.bitrate)
		l, c := quality.LSD(ref, out, d.rate, d.rate/2, nil), quality.NCC(ref, out)
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
			ref := espeak(b, d.rate, quality.SpeechText)
			writeWAV(b, "original-"+itoa(d.rate)+".wav", ref, d.rate)
			var out []int16
			var bytes int
			for i := 0; i < b.N; i++ {
				out, bytes = codecRoundTrip(b, ref, d.rate, d.bitrate)
			}
			writeWAV(b, "decoded-"+d.name+".wav", out, d.rate)
			b.ReportMetric(float64(bytes*8)/(float64(len(ref))/float64(d.rate))/1000, "kbit/s")
			b.ReportMetric(quality.LSD(ref, out, d.rate, d.rate/2, nil), "LSD_dB")
			b.ReportMetric(quality.NCC(ref, out), "NCC")
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
