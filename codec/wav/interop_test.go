package wav

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestDecodeWhatSoxAndFFmpegWrite reads files written by sox and ffmpeg in
// the encodings recorders and impulse-response collections use, and checks
// every sample against the same tool's own conversion of the same signal to
// 16-bit PCM (without dither): equal within one step of rounding.
func TestDecodeWhatSoxAndFFmpegWrite(t *testing.T) {
	sox, err := exec.LookPath("sox")
	if err != nil {
		t.Skip("sox not installed (scripts/deps.sh installs it)")
	}
	dir := t.TempDir()
	// A 0.3 s sweep at -3 dBFS on every channel, slightly different per
	// channel so that a channel mix-up shows.
	synth := func(out string, channels int, args ...string) {
		t.Helper()
		cmd := []string{"-D", "-n", "-r", "48000", "-c", strconv.Itoa(channels)}
		cmd = append(cmd, args...)
		cmd = append(cmd, out, "synth", "0.3", "sine", "100-7000", "gain", "-3")
		if channels > 1 {
			cmd = append(cmd, "remix")
			for c := range channels {
				cmd = append(cmd, "1v"+[]string{"1", "0.9", "0.8", "0.7", "0.6", "0.5"}[c%6])
			}
		}
		if b, err := exec.Command(sox, cmd...).CombinedOutput(); err != nil {
			t.Fatalf("sox %v: %v: %s", cmd, err, b)
		}
	}
	convert := func(in, out string) {
		t.Helper()
		if b, err := exec.Command(sox, "-D", in, "-e", "signed-integer", "-b", "16", out).CombinedOutput(); err != nil {
			t.Fatalf("sox %s -> 16-bit: %v: %s", in, err, b)
		}
	}
	tests := []struct {
		name     string
		channels int
		args     []string
		tol      int
	}{
		{"24-bit", 1, []string{"-e", "signed-integer", "-b", "24"}, 1},
		{"32-bit", 1, []string{"-e", "signed-integer", "-b", "32"}, 1},
		{"float32", 1, []string{"-e", "floating-point", "-b", "32"}, 1},
		{"float64", 1, []string{"-e", "floating-point", "-b", "64"}, 1},
		{"8-bit", 1, []string{"-e", "unsigned-integer", "-b", "8"}, 0},
		{"mu-law", 1, []string{"-e", "u-law"}, 0},
		{"A-law", 1, []string{"-e", "a-law"}, 0},
		{"6 channels 24-bit (extensible)", 6, []string{"-e", "signed-integer", "-b", "24"}, 1},
		{"4 channels float (extensible)", 4, []string{"-e", "floating-point", "-b", "32"}, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := filepath.Join(dir, "src"+string(rune('a'+i))+".wav")
			ref := filepath.Join(dir, "ref"+string(rune('a'+i))+".wav")
			synth(src, tt.channels, tt.args...)
			convert(src, ref)
			compareDecoded(t, src, ref, tt.channels, tt.tol, 16000)
		})
	}
	ff, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Log("ffmpeg not installed: its float and 24-bit files not checked")
		return
	}
	for _, codec := range []string{"pcm_f32le", "pcm_s24le"} {
		t.Run("ffmpeg "+codec, func(t *testing.T) {
			src := filepath.Join(dir, "ff-"+codec+".wav")
			ref := filepath.Join(dir, "ff-"+codec+"-16.wav")
			if b, err := exec.Command(ff, "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=0.3",
				"-ac", "2", "-c:a", codec, "-y", src).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg: %v: %s", err, b)
			}
			if b, err := exec.Command(ff, "-v", "error", "-i", src, "-c:a", "pcm_s16le", "-y", ref).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg -> 16-bit: %v: %s", err, b)
			}
			compareDecoded(t, src, ref, 2, 1, 2000) // ffmpeg's sine is at -18 dBFS
		})
	}
}

func compareDecoded(t *testing.T, src, ref string, channels, tol, minPeak int) {
	t.Helper()
	got, err := ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Channels != channels || got.Channels != want.Channels || got.SampleRate != want.SampleRate {
		t.Fatalf("format %d Hz x %d, want %d Hz x %d", got.SampleRate, got.Channels, want.SampleRate, channels)
	}
	if len(got.Samples) != len(want.Samples) || len(got.Samples) < 1000 {
		t.Fatalf("%d samples, the tool's 16-bit file has %d", len(got.Samples), len(want.Samples))
	}
	worst, peak := 0, 0
	for i, v := range got.Samples {
		worst = max(worst, abs(int(v)-int(want.Samples[i])))
		peak = max(peak, abs(int(v)))
	}
	if worst > tol {
		t.Errorf("samples differ from the tool's own 16-bit conversion by up to %d (allowed %d)", worst, tol)
	}
	if peak < minPeak {
		t.Errorf("peak %d, want at least %d: the signal did not come through", peak, minPeak)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
