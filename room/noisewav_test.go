package room

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/codec/wav"
)

// writeWAV writes interleaved samples as a PCM16 WAVE file.
func writeWAV(t *testing.T, path string, rate, channels int, s []int16) {
	t.Helper()
	if err := wav.WriteFile(path, rate, channels, s); err != nil {
		t.Fatal(err)
	}
}

// A noise recording (here stereo 44.1 kHz: a 440 Hz tone in one channel,
// 1 kHz in the other) replaces the noise kind: at the mic it plays at
// NoiseDBFS, resampled to 16 kHz with both channels in it, from a position
// the seed chooses.
func TestNoiseWAVReplacesTheKind(t *testing.T) {
	const rate = 44100
	rec := make([]int16, 2*rate*2) // 2 s
	for i := range len(rec) / 2 {
		x := float64(i) / rate
		rec[2*i] = int16(8000 * math.Sin(2*math.Pi*440*x))
		rec[2*i+1] = int16(8000 * math.Sin(2*math.Pi*1000*x))
	}
	path := filepath.Join(t.TempDir(), "fan.wav")
	writeWAV(t, path, rate, 2, rec)

	capture := func(c Config) []int16 {
		t.Helper()
		p, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		mic := make([]int16, 4*Rate) // two loops
		p.Capture(0, mic)
		return mic
	}
	// A pink kind as well (as the moderate room has): the recording wins.
	mic := capture(Config{EchoGainDB: -40, Noise: NoisePink, NoiseWAV: path, NoiseDBFS: -30, Seed: 3})
	if db := 20 * math.Log10(rms(mic)/32768); math.Abs(db+30) > 0.5 {
		t.Errorf("level %.2f dBFS, want -30±0.5", db)
	}
	// Both tones, each half the power (channels mixed), nothing else.
	tone := func(s []int16, hz float64) float64 {
		var c, q float64
		for i, v := range s {
			ph := 2 * math.Pi * hz * float64(i) / Rate
			c += float64(v) * math.Cos(ph)
			q += float64(v) * math.Sin(ph)
		}
		return 2 * (c*c + q*q) / float64(len(s)) / float64(len(s)) // the tone's power
	}
	var total float64
	for _, v := range mic {
		total += float64(v) * float64(v)
	}
	total /= float64(len(mic))
	p440, p1k := tone(mic, 440)/total, tone(mic, 1000)/total
	if math.Abs(p440-0.5) > 0.05 || math.Abs(p1k-0.5) > 0.05 {
		t.Errorf("power shares 440 Hz %.3f, 1 kHz %.3f; want 0.5 each", p440, p1k)
	}
	// Another seed starts elsewhere in the recording.
	other := capture(Config{EchoGainDB: -40, NoiseWAV: path, NoiseDBFS: -30, Seed: 4})
	same := true
	for i := range mic {
		same = same && mic[i] == other[i]
	}
	if same {
		t.Error("seeds 3 and 4 play the recording from the same position")
	}
	// No noise_dbfs in range: the same check as for a kind.
	if _, err := New(Config{NoiseWAV: path, NoiseDBFS: 3}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "noise_dbfs 3") {
		t.Errorf("noise_dbfs 3 with a recording: %v", err)
	}
}

// A recording that cannot be used is a configuration error naming
// noise_wav and the file.
func TestNoiseWAVErrors(t *testing.T) {
	dir := t.TempDir()
	silent := filepath.Join(dir, "silent.wav")
	writeWAV(t, silent, 16000, 1, make([]int16, 16000))
	short := filepath.Join(dir, "short.wav")
	writeWAV(t, short, 16000, 1, []int16{1, 2, 3, 4})
	text := filepath.Join(dir, "text.wav")
	os.WriteFile(text, []byte("not audio"), 0o644)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.wav"), "no such file"},
		{silent, "silent"},
		{short, "too short"},
		{text, "wav:"},
	} {
		_, err := New(Config{NoiseWAV: tc.path, NoiseDBFS: -40})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `noise_wav "`+tc.path+`": `) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrConfig naming noise_wav and %q", tc.path, err, tc.want)
		}
	}
}
