package quality

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
)

// ErrNoSpeechSynth is returned by Speech when espeak-ng is not installed.
var ErrNoSpeechSynth = errors.New("quality: espeak-ng not installed (scripts/deps.sh installs it)")

// SpeechText is a sentence pair with varied phonemes, used by the codec
// benchmarks.
const SpeechText = "Hello, I am your robot. The quick brown fox jumps over the lazy dog. " +
	"Please tell me what time it is in Tokyo, and turn on the lights in the kitchen."

// Speech synthesises text with espeak-ng (real speech-like material
// generated at test time rather than committed) and returns it as mono
// PCM at rate.
func Speech(text string, rate int) ([]int16, error) {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		return nil, ErrNoSpeechSynth
	}
	dir, err := os.MkdirTemp("", "quality-speech")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "speech.wav")
	if out, err := exec.Command("espeak-ng", "-s", "160", "-w", path, text).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("quality: espeak-ng: %v: %s", err, out)
	}
	a, err := wav.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quality: espeak-ng output: %w", err)
	}
	if a.Channels != 1 {
		return nil, fmt.Errorf("quality: espeak-ng wrote %d channels", a.Channels)
	}
	rs, err := resample.New(a.SampleRate, rate, resample.QualityHigh)
	if err != nil {
		return nil, err
	}
	pcm := make([]int16, rs.OutLen(len(a.Samples)))
	return pcm[:rs.Process(pcm, a.Samples)], nil
}

// WriteWAV writes mono pcm at rate to path, creating its directory.
func WriteWAV(path string, pcm []int16, rate int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := wav.NewWriter(f, rate, 1)
	if err != nil {
		f.Close()
		return err
	}
	if err := w.Write(pcm); err != nil {
		f.Close()
		return err
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
