// Package opus compresses speech with the Opus codec (RFC 6716): an Encoder
// turns one frame of 16-bit mono PCM into one Opus packet, a Decoder turns
// packets back into PCM and conceals lost packets (packet-loss concealment,
// and in-band forward error correction when the next packet carries it).
//
// The codec is libopus, through the gopkg.in/hraban/opus.v2 binding (cgo).
// It is built in with -tags opus (and cgo, with libopus-dev and
// libopusfile-dev installed; scripts/detect-tags.sh adds the tag when
// pkg-config finds opus). Without the tag NewEncoder and NewDecoder return
// an error wrapping device.ErrNotBuiltIn and Available reports false: the
// pure-Go build speaks PCM only. The packet parser (ParsePacket) is pure
// Go and always available, so gateways and tests can validate packets in
// any build.
//
// # Allocation
//
// Encode, Decode, DecodeFEC and Conceal never allocate: PCM and packet
// buffers are the caller's (asserted with testing.AllocsPerRun).
//
// # Concurrency
//
// An Encoder or a Decoder is used by one goroutine at a time; the functions
// are pure.
package opus

import (
	"errors"
	"fmt"
)

// Errors. Use errors.Is.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("opus: invalid configuration")
	// ErrFrame wraps bad Encode/Decode arguments (frame size, buffer).
	ErrFrame = errors.New("opus: bad frame")
	// ErrPacket wraps malformed packets (ParsePacket and the decoder).
	ErrPacket = errors.New("opus: malformed packet")
)

// Limits and defaults.
const (
	// MaxPacket is the largest packet Encode produces: 1275 bytes is the
	// largest Opus frame, and one frame is encoded per call.
	MaxPacket = 1275
	// MaxPacketMS is the longest packet (in milliseconds of audio) the
	// decoder accepts (RFC 6716 §3.2.5).
	MaxPacketMS = 120
	// DefaultUpBitrate is the default mic (uplink) bitrate: wideband
	// speech, good for recognition, 16 kbit/s.
	DefaultUpBitrate = 16000
	// DefaultDownBitrate is the default TTS (downlink) bitrate: 24 kHz
	// super-wideband speech.
	DefaultDownBitrate = 24000
	// MinBitrate and MaxBitrate bound EncoderConfig.Bitrate (libopus
	// accepts 500..512000; below 6 kbit/s speech is not intelligible).
	MinBitrate = 6000
	MaxBitrate = 128000
)

// SampleRates are the PCM rates libopus encodes from and decodes to.
var SampleRates = []int{8000, 12000, 16000, 24000, 48000}

// FrameMS are the frame durations Encode accepts (whole milliseconds; Opus
// also has 2.5 and 5 ms frames, not used here).
var FrameMS = []int{10, 20, 40, 60}

// EncoderConfig configures an Encoder. Zero fields take the defaults.
type EncoderConfig struct {
	SampleRate int  // PCM rate, one of SampleRates; default 16000
	FrameMS    int  // frame duration, one of FrameMS; default 20
	Bitrate    int  // target bits per second, VBR; default DefaultUpBitrate
	DTX        bool // discontinuous transmission: 1-2 byte packets in silence
	// FEC adds in-band forward error correction (a low-bitrate copy of
	// the previous frame) sized for LossPercent expected loss.
	FEC         bool
	LossPercent int // expected packet loss, 0..100; default 10 when FEC is set
	// Complexity is libopus' speed/quality trade-off 0..10; default 5
	// (a Raspberry Pi 4 class core encodes 20 ms in well under 1 ms).
	Complexity int
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c EncoderConfig) WithDefaults() EncoderConfig {
	if c.SampleRate == 0 {
		c.SampleRate = 16000
	}
	if c.FrameMS == 0 {
		c.FrameMS = 20
	}
	if c.Bitrate == 0 {
		c.Bitrate = DefaultUpBitrate
	}
	if c.FEC && c.LossPercent == 0 {
		c.LossPercent = 10
	}
	if c.Complexity == 0 {
		c.Complexity = 5
	}
	return c
}

// Validate reports the first invalid field (after defaults).
func (c EncoderConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case !validRate(c.SampleRate):
		return fmt.Errorf("%w: sample rate %d Hz, want one of %v", ErrConfig, c.SampleRate, SampleRates)
	case !validFrameMS(c.FrameMS):
		return fmt.Errorf("%w: frame %d ms, want one of %v", ErrConfig, c.FrameMS, FrameMS)
	case c.Bitrate < MinBitrate || c.Bitrate > MaxBitrate:
		return fmt.Errorf("%w: bitrate %d bit/s outside %d..%d", ErrConfig, c.Bitrate, MinBitrate, MaxBitrate)
	case c.LossPercent < 0 || c.LossPercent > 100:
		return fmt.Errorf("%w: loss percent %d outside 0..100", ErrConfig, c.LossPercent)
	case c.Complexity < 0 || c.Complexity > 10:
		return fmt.Errorf("%w: complexity %d outside 0..10", ErrConfig, c.Complexity)
	}
	return nil
}

// FrameSamples is the number of PCM samples in one frame.
func (c EncoderConfig) FrameSamples() int {
	c = c.WithDefaults()
	return c.SampleRate * c.FrameMS / 1000
}

func validRate(r int) bool {
	for _, v := range SampleRates {
		if v == r {
			return true
		}
	}
	return false
}

func validFrameMS(ms int) bool {
	for _, v := range FrameMS {
		if v == ms {
			return true
		}
	}
	return false
}

// ValidSampleRate reports whether libopus can encode from / decode to r Hz.
func ValidSampleRate(r int) bool { return validRate(r) }

// ValidFrameMS reports whether Encode accepts frames of ms milliseconds.
func ValidFrameMS(ms int) bool { return validFrameMS(ms) }
