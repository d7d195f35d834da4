package duplex

import (
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/hw/sim"
)

// Synthetic returns d of the simulator's speech-like signal (hw/sim's
// generator) at 16 kHz, with no noise.
func Synthetic(d time.Duration, seed uint64) []int16 {
	clk := clock.NewFake()
	clk.SetAutoAdvance(true)
	m, err := sim.NewMic(sim.MicConfig{Script: &sim.SpeechScript{Utterances: []sim.Utterance{{Speech: d}}}, Seed: seed, NoiseDBFS: -120}, clk)
	if err != nil {
		return nil
	}
	defer m.Close()
	out := make([]int16, int(d.Seconds()*16000))
	for off := 0; off < len(out); {
		n, err := m.Read(out[off:min(off+320, len(out))])
		if err != nil {
			break
		}
		off += n
	}
	return out
}

// Espeak synthesises text with espeak-ng (voice, e.g. "en" or "en+f3") and
// returns it decoded; an error when espeak-ng is missing.
func Espeak(text, voice string) (wav.Audio, error) {
	dir, err := os.MkdirTemp("", "duplex-espeak")
	if err != nil {
		return wav.Audio{}, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "s.wav")
	if out, err := exec.Command("espeak-ng", "-v", voice, "-s", "165", "-w", p, text).CombinedOutput(); err != nil {
		return wav.Audio{}, &exec.Error{Name: "espeak-ng: " + string(out), Err: err}
	}
	return wav.ReadFile(p)
}
