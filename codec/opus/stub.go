//go:build !(opus && cgo)

package opus

import (
	"fmt"

	"github.com/robot-agent/robot-agent/device"
)

// Backend names the Opus implementation built into this binary ("" for
// none).
const Backend = ""

// Available reports whether Opus is built into this binary.
func Available() bool { return false }

func errNotBuilt() error {
	return fmt.Errorf("opus: no Opus codec in this binary: %w (build with cgo and -tags opus, libopus-dev installed)", device.ErrNotBuiltIn)
}

// Encoder is not available in this build; NewEncoder fails.
type Encoder struct{ cfg EncoderConfig }

// NewEncoder validates cfg and then reports that Opus is not built in.
func NewEncoder(cfg EncoderConfig) (*Encoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, errNotBuilt()
}

// Config returns the encoder's configuration.
func (e *Encoder) Config() EncoderConfig { return e.cfg }

// FrameSamples is the number of samples Encode takes.
func (e *Encoder) FrameSamples() int { return e.cfg.FrameSamples() }

// Encode fails: Opus is not built in.
func (e *Encoder) Encode(pcm []int16, dst []byte) (int, error) { return 0, errNotBuilt() }

// Reset fails: Opus is not built in.
func (e *Encoder) Reset() error { return errNotBuilt() }

// Decoder is not available in this build; NewDecoder fails.
type Decoder struct{ rate int }

// NewDecoder reports that Opus is not built in.
func NewDecoder(sampleRate int) (*Decoder, error) {
	if !validRate(sampleRate) {
		return nil, fmt.Errorf("%w: sample rate %d Hz, want one of %v", ErrConfig, sampleRate, SampleRates)
	}
	return nil, errNotBuilt()
}

// SampleRate is the rate the decoder outputs.
func (d *Decoder) SampleRate() int { return d.rate }

// LastSamples is the duration of the last packet decoded.
func (d *Decoder) LastSamples() int { return d.rate / 50 }

// MaxSamples is the largest packet's duration at the decoder's rate.
func (d *Decoder) MaxSamples() int { return d.rate * MaxPacketMS / 1000 }

// Decode fails: Opus is not built in.
func (d *Decoder) Decode(pkt []byte, pcm []int16) (int, error) { return 0, errNotBuilt() }

// DecodeFEC fails: Opus is not built in.
func (d *Decoder) DecodeFEC(pkt []byte, pcm []int16) (int, error) { return 0, errNotBuilt() }

// Conceal fails: Opus is not built in.
func (d *Decoder) Conceal(pcm []int16) (int, error) { return 0, errNotBuilt() }
