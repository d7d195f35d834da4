package room

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// writeFloatWAV writes mono float32 samples at rate as a WAVE file.
func writeFloatWAV(t *testing.T, path string, rate int, x []float64) {
	t.Helper()
	data := make([]byte, 0, 4*len(x))
	for _, v := range x {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
	}
	fmtc := []byte{3, 0, 1, 0}
	fmtc = binary.LittleEndian.AppendUint32(fmtc, uint32(rate))
	fmtc = binary.LittleEndian.AppendUint32(fmtc, uint32(4*rate))
	fmtc = append(fmtc, 4, 0, 32, 0)
	b := []byte("WAVEfmt ")
	b = binary.LittleEndian.AppendUint32(b, uint32(len(fmtc)))
	b = append(b, fmtc...)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	f := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(b)))...)
	if err := os.WriteFile(path, append(f, b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An impulse response from a WAV file is the same room whatever level the
// file stores it at (float files hold responses far under PCM16's step, or
// above full scale), and keeps its timing when resampled.
func TestIRWAVLevelAndTiming(t *testing.T) {
	const rate = 48000
	ir := make([]float64, rate/2) // 0.5 s: 3 ms of leading silence, a direct path, a decaying tail
	seed := uint32(1)
	for k := 144 + 1; k < len(ir); k++ {
		seed = seed*1664525 + 1013904223
		ir[k] = (float64(seed>>8)/(1<<24) - 0.5) * 0.3 * math.Exp(-6.9*float64(k)/rate/0.4)
	}
	ir[144] = 1
	dir := t.TempDir()
	taps := func(scale float64) []float64 {
		x := make([]float64, len(ir))
		for i, v := range ir {
			x[i] = v * scale
		}
		path := filepath.Join(dir, "ir.wav")
		writeFloatWAV(t, path, rate, x)
		p, err := New(Config{IRWAV: path, EchoGainDB: -6})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, p.IRLength())
		for _, tp := range p.taps {
			out[tp.k] = float64(tp.g)
		}
		return out
	}
	ref := taps(1)
	peak := 0
	for k, v := range ref {
		if math.Abs(v) > math.Abs(ref[peak]) {
			peak = k
		}
	}
	if peak != 48 { // 3 ms at 16 kHz
		t.Fatalf("direct path at tap %d, want 48 (3 ms)", peak)
	}
	// The tail 0.3 s in, where a PCM16 copy of the 1e-4 file is zero.
	var eTail float64
	for _, v := range ref[4800:] {
		eTail += v * v
	}
	for _, scale := range []float64{1e-4, 4} {
		got := taps(scale)
		if len(got) != len(ref) {
			t.Fatalf("scale %g: %d taps, want %d", scale, len(got), len(ref))
		}
		var eDiff float64
		for k := 4800; k < len(ref); k++ {
			d := got[k] - ref[k]
			eDiff += d * d
		}
		var maxDiff float64
		for k := range ref {
			maxDiff = max(maxDiff, math.Abs(got[k]-ref[k]))
		}
		if maxDiff > 1e-5*math.Abs(ref[peak]) || eDiff > 1e-8*eTail {
			t.Errorf("scale %g: taps differ from the unit-level file's by up to %.2g (peak %.3g), tail error %.1f dB", scale, maxDiff, ref[peak], 10*math.Log10(eDiff/eTail))
		}
	}
}
