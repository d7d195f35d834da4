//go:build opus && cgo

package opus

import (
	"errors"
	"math"
	"testing"
)

// voiced returns n samples of a speech-like harmonic signal at rate.
func voiced(n, rate int) []int16 {
	out := make([]int16, n)
	for i := range out {
		t := float64(i) / float64(rate)
		f0 := 140 + 40*math.Sin(2*math.Pi*1.3*t)
		env := 0.6 + 0.4*math.Sin(2*math.Pi*4*t)
		var v float64
		for k := 1; k <= 10; k++ {
			v += math.Sin(2*math.Pi*f0*float64(k)*t) / float64(k)
		}
		out[i] = int16(3000 * env * v)
	}
	return out
}

// correlationAtBestLag is the highest normalised correlation of a and b
// over lags 0..maxLag (b delayed).
func correlationAtBestLag(a, b []int16, maxLag int) (float64, int) {
	best, bestLag := -1.0, 0
	for lag := 0; lag <= maxLag; lag++ {
		var sab, saa, sbb float64
		for i := 0; i+lag < len(b) && i < len(a); i++ {
			x, y := float64(a[i]), float64(b[i+lag])
			sab += x * y
			saa += x * x
			sbb += y * y
		}
		if c := sab / math.Sqrt(saa*sbb+1e-9); c > best {
			best, bestLag = c, lag
		}
	}
	return best, bestLag
}

func encodeAll(t testing.TB, cfg EncoderConfig, pcm []int16) [][]byte {
	enc, err := NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs := enc.FrameSamples()
	var pkts [][]byte
	buf := make([]byte, MaxPacket)
	for off := 0; off+fs <= len(pcm); off += fs {
		n, err := enc.Encode(pcm[off:off+fs], buf)
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, append([]byte(nil), buf[:n]...))
	}
	return pkts
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       EncoderConfig
		outRate   int
		wantCorr  float64
		maxKbit   float64
		wantFrame int // samples per decoded packet at outRate
	}{
		{"16k 20ms 16kbit", EncoderConfig{}, 16000, 0.6, 20, 320},
		{"16k 60ms", EncoderConfig{FrameMS: 60}, 16000, 0.6, 20, 960},
		{"24k 20ms 24kbit", EncoderConfig{SampleRate: 24000, Bitrate: 24000}, 24000, 0.6, 28, 480},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate := tc.cfg.WithDefaults().SampleRate
			in := voiced(rate*2, rate)
			pkts := encodeAll(t, tc.cfg, in)
			dec, err := NewDecoder(tc.outRate)
			if err != nil {
				t.Fatal(err)
			}
			var out []int16
			pcm := make([]int16, dec.MaxSamples())
			bytes := 0
			for _, p := range pkts {
				if _, err := ParsePacket(p); err != nil {
					t.Fatalf("encoder produced a packet the parser rejects: %v", err)
				}
				n, err := dec.Decode(p, pcm)
				if err != nil {
					t.Fatal(err)
				}
				if n != tc.wantFrame {
					t.Fatalf("decoded %d samples, want %d", n, tc.wantFrame)
				}
				out = append(out, pcm[:n]...)
				bytes += len(p)
			}
			kbit := float64(bytes*8) / 2 / 1000
			if kbit > tc.maxKbit {
				t.Errorf("%.1f kbit/s, want <= %.0f", kbit, tc.maxKbit)
			}
			c, lag := correlationAtBestLag(in[rate/10:], out[rate/10:], rate/50)
			t.Logf("%.1f kbit/s, correlation %.3f at lag %d samples", kbit, c, lag)
			if c < tc.wantCorr {
				t.Errorf("correlation %.3f < %.2f", c, tc.wantCorr)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	enc, err := NewEncoder(EncoderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Encode(make([]int16, 100), make([]byte, MaxPacket)); !errors.Is(err, ErrFrame) {
		t.Errorf("short frame: %v", err)
	}
	if _, err := NewEncoder(EncoderConfig{Bitrate: 999999}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad bitrate: %v", err)
	}
	dec, _ := NewDecoder(24000)
	if _, err := dec.Decode([]byte{9<<3 | 1, 0}, make([]int16, 2880)); !errors.Is(err, ErrPacket) {
		t.Errorf("malformed packet: %v", err)
	}
	if _, err := dec.Decode([]byte{11 << 3}, make([]int16, 100)); !errors.Is(err, ErrFrame) {
		t.Errorf("small output: %v", err)
	}
	if _, err := dec.Conceal(make([]int16, 7)); !errors.Is(err, ErrFrame) {
		t.Errorf("conceal 7 samples: %v", err)
	}
}

// TestDTX: with DTX a silent stream costs a few bytes per frame.
func TestDTX(t *testing.T) {
	silence := make([]int16, 16000*2)
	var with, without int
	for _, p := range encodeAll(t, EncoderConfig{DTX: true}, silence) {
		with += len(p)
	}
	for _, p := range encodeAll(t, EncoderConfig{}, silence) {
		without += len(p)
	}
	t.Logf("2 s of silence: %d bytes with DTX, %d without", with, without)
	if with >= without || with > 100*3 {
		t.Errorf("DTX did not shrink silence: %d bytes with, %d without", with, without)
	}
}

// TestConcealment: PLC continues the signal better than silence would,
// and FEC from the next packet beats PLC.
func TestConcealment(t *testing.T) {
	const rate = 24000
	in := voiced(rate*2, rate)
	pkts := encodeAll(t, EncoderConfig{SampleRate: rate, Bitrate: 32000, FEC: true, LossPercent: 20}, in)
	run := func(mode string) []int16 {
		dec, _ := NewDecoder(rate)
		pcm := make([]int16, dec.MaxSamples())
		var out []int16
		for i, p := range pkts {
			if i%10 == 5 { // lost
				switch mode {
				case "plc":
					n, err := dec.Conceal(pcm[:480])
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, pcm[:n]...)
				case "fec":
					n, err := dec.DecodeFEC(pkts[i+1], pcm[:480])
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, pcm[:n]...)
				case "zero":
					out = append(out, make([]int16, 480)...)
				}
				continue
			}
			n, err := dec.Decode(p, pcm)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pcm[:n]...)
		}
		return out
	}
	clean := func() []int16 {
		dec, _ := NewDecoder(rate)
		pcm := make([]int16, dec.MaxSamples())
		var out []int16
		for _, p := range pkts {
			n, _ := dec.Decode(p, pcm)
			out = append(out, pcm[:n]...)
		}
		return out
	}()
	errOf := func(out []int16) float64 {
		var e float64
		for i := range clean {
			if (i/480)%10 == 5 {
				d := float64(clean[i]) - float64(out[i])
				e += d * d
			}
		}
		return e
	}
	zero, plc, fec := errOf(run("zero")), errOf(run("plc")), errOf(run("fec"))
	t.Logf("error energy in lost frames vs the lossless decode: silence %.3g, PLC %.3g, FEC %.3g", zero, plc, fec)
	if !(plc < zero) || !(fec < plc) {
		t.Errorf("want FEC < PLC < silence, got %.3g %.3g %.3g", fec, plc, zero)
	}
}

func TestNoAllocs(t *testing.T) {
	enc, _ := NewEncoder(EncoderConfig{})
	in := voiced(320, 16000)
	pkt := make([]byte, MaxPacket)
	n, _ := enc.Encode(in, pkt)
	dec, _ := NewDecoder(24000)
	pcm := make([]int16, dec.MaxSamples())
	for name, fn := range map[string]func(){
		"Encode":    func() { enc.Encode(in, pkt) },
		"Decode":    func() { dec.Decode(pkt[:n], pcm) },
		"Conceal":   func() { dec.Conceal(pcm[:480]) },
		"DecodeFEC": func() { dec.DecodeFEC(pkt[:n], pcm[:480]) },
		"Reset":     func() { enc.Reset() },
	} {
		if a := testing.AllocsPerRun(200, fn); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// FuzzDecode: the decoder never crashes on any packet, rejects what the
// parser rejects, and agrees with it on the duration of what it accepts.
func FuzzDecode(f *testing.F) {
	for _, p := range encodeAll(f, EncoderConfig{SampleRate: 24000}, voiced(2400, 24000)) {
		f.Add(p)
	}
	f.Add([]byte{9<<3 | 3, 0xC3, 1, 2, 3, 0, 0, 0, 0, 0, 0})
	dec, _ := NewDecoder(24000)
	pcm := make([]int16, dec.MaxSamples())
	f.Fuzz(func(t *testing.T, b []byte) {
		want, perr := PacketSamples(b, 24000)
		n, err := dec.Decode(b, pcm)
		if perr != nil {
			if err == nil {
				t.Fatalf("decoder accepted %x that the parser rejects: %v", b, perr)
			}
			return
		}
		if err == nil && n != want {
			t.Fatalf("decoded %d samples, parser says %d", n, want)
		}
	})
}

func BenchmarkEncode20ms16k(b *testing.B) {
	enc, _ := NewEncoder(EncoderConfig{})
	in := voiced(16000, 16000)
	pkt := make([]byte, MaxPacket)
	b.ReportAllocs()
	b.ResetTimer()
	bytes := 0
	for i := 0; i < b.N; i++ {
		off := (i * 320) % (len(in) - 320)
		n, _ := enc.Encode(in[off:off+320], pkt)
		bytes += n
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/frame")
}

func BenchmarkDecode20ms24k(b *testing.B) {
	pkts := encodeAll(b, EncoderConfig{SampleRate: 24000, Bitrate: DefaultDownBitrate}, voiced(24000, 24000))
	dec, _ := NewDecoder(24000)
	pcm := make([]int16, dec.MaxSamples())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dec.Decode(pkts[i%len(pkts)], pcm)
	}
}

func BenchmarkConceal20ms24k(b *testing.B) {
	pkts := encodeAll(b, EncoderConfig{SampleRate: 24000}, voiced(24000, 24000))
	dec, _ := NewDecoder(24000)
	pcm := make([]int16, dec.MaxSamples())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%4 == 0 {
			dec.Decode(pkts[i%len(pkts)], pcm)
		} else {
			dec.Conceal(pcm[:480])
		}
	}
}

// BenchmarkFullDuplexMinute is the robot's codec work for one minute of
// full-duplex Opus at the defaults: encoding 3000 mic frames (16 kHz,
// 20 ms, 16 kbit/s) and decoding 3000 TTS packets (24 kHz, 20 ms,
// 24 kbit/s). ns/op is CPU time per minute of conversation on one core;
// cpu_% is that as a share of the minute.
func BenchmarkFullDuplexMinute(b *testing.B) {
	mic := voiced(16000*2, 16000)
	pkts := encodeAll(b, EncoderConfig{SampleRate: 24000, Bitrate: DefaultDownBitrate, FEC: true}, voiced(24000*2, 24000))
	enc, _ := NewEncoder(EncoderConfig{})
	dec, _ := NewDecoder(24000)
	pkt := make([]byte, MaxPacket)
	pcm := make([]int16, dec.MaxSamples())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for f := 0; f < 3000; f++ {
			off := (f % 100) * 320
			enc.Encode(mic[off:off+320], pkt)
			dec.Decode(pkts[f%len(pkts)], pcm)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/60e9*100, "cpu_%")
}
