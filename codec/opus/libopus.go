//go:build opus && cgo

package opus

import (
	"fmt"

	hopus "gopkg.in/hraban/opus.v2"
)

// Backend names the Opus implementation built into this binary ("" for
// none).
const Backend = "libopus"

// Available reports whether Opus is built into this binary.
func Available() bool { return true }

// Encoder encodes fixed-size PCM frames into Opus packets (VBR,
// application VoIP). One goroutine at a time.
type Encoder struct {
	enc   *hopus.Encoder
	cfg   EncoderConfig
	frame int
}

// NewEncoder returns an encoder for cfg (see EncoderConfig for defaults).
func NewEncoder(cfg EncoderConfig) (*Encoder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	enc, err := hopus.NewEncoder(cfg.SampleRate, 1, hopus.AppVoIP)
	if err != nil {
		return nil, fmt.Errorf("opus: new encoder: %w", err)
	}
	e := &Encoder{enc: enc, cfg: cfg, frame: cfg.FrameSamples()}
	if err := e.configure(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Encoder) configure() error {
	c := e.cfg
	for _, step := range []struct {
		what string
		err  error
	}{
		{"bitrate", e.enc.SetBitrate(c.Bitrate)},
		{"dtx", e.enc.SetDTX(c.DTX)},
		{"inband fec", e.enc.SetInBandFEC(c.FEC)},
		{"packet loss", e.enc.SetPacketLossPerc(c.LossPercent)},
		{"complexity", e.enc.SetComplexity(c.Complexity)},
	} {
		if step.err != nil {
			return fmt.Errorf("opus: set %s: %w", step.what, step.err)
		}
	}
	return nil
}

// Config returns the encoder's configuration (defaults applied).
func (e *Encoder) Config() EncoderConfig { return e.cfg }

// FrameSamples is the number of samples Encode takes.
func (e *Encoder) FrameSamples() int { return e.frame }

// Encode encodes exactly one frame (FrameSamples samples) into dst and
// returns the packet length. dst should hold MaxPacket bytes. It does not
// allocate.
func (e *Encoder) Encode(pcm []int16, dst []byte) (int, error) {
	if len(pcm) != e.frame {
		return 0, fmt.Errorf("%w: %d samples, want %d (%d ms at %d Hz)", ErrFrame, len(pcm), e.frame, e.cfg.FrameMS, e.cfg.SampleRate)
	}
	if len(dst) < 8 {
		return 0, fmt.Errorf("%w: packet buffer of %d bytes", ErrFrame, len(dst))
	}
	n, err := e.enc.Encode(pcm, dst[:len(dst):len(dst)])
	if err != nil {
		return 0, fmt.Errorf("opus: encode: %w", err)
	}
	return n, nil
}

// Reset returns the encoder to its freshly created state (a new stream),
// keeping its configuration. It does not allocate.
func (e *Encoder) Reset() error {
	if err := e.enc.Reset(); err != nil {
		return fmt.Errorf("opus: reset encoder: %w", err)
	}
	return nil
}

// Decoder decodes Opus packets to mono PCM at its sample rate and conceals
// lost packets. One goroutine at a time.
type Decoder struct {
	dec  *hopus.Decoder
	rate int
	last int // samples of the last packet decoded or concealed
}

// NewDecoder returns a decoder producing mono PCM at sampleRate (one of
// SampleRates; any Opus stream decodes at any of them).
func NewDecoder(sampleRate int) (*Decoder, error) {
	if !validRate(sampleRate) {
		return nil, fmt.Errorf("%w: sample rate %d Hz, want one of %v", ErrConfig, sampleRate, SampleRates)
	}
	dec, err := hopus.NewDecoder(sampleRate, 1)
	if err != nil {
		return nil, fmt.Errorf("opus: new decoder: %w", err)
	}
	return &Decoder{dec: dec, rate: sampleRate, last: sampleRate / 50}, nil
}

// SampleRate is the rate the decoder outputs.
func (d *Decoder) SampleRate() int { return d.rate }

// LastSamples is the duration in samples of the last packet decoded or
// concealed (20 ms before the first one): the natural length to conceal a
// lost packet with.
func (d *Decoder) LastSamples() int { return d.last }

// Decode decodes one packet into pcm, which must hold the packet's
// duration (MaxSamples is always enough), and returns the samples written.
// The packet is validated first (ParsePacket), so a malformed packet is an
// error wrapping ErrPacket and leaves the decoder state untouched. It does
// not allocate.
func (d *Decoder) Decode(pkt []byte, pcm []int16) (int, error) {
	n, err := PacketSamples(pkt, d.rate)
	if err != nil {
		return 0, err
	}
	if len(pcm) < n {
		return 0, fmt.Errorf("%w: output of %d samples for a packet of %d", ErrFrame, len(pcm), n)
	}
	got, err := d.dec.Decode(pkt, pcm[:n:n])
	if err != nil {
		return 0, fmt.Errorf("%w: libopus: %v", ErrPacket, err)
	}
	d.last = got
	return got, nil
}

// DecodeFEC recovers the packet lost just before pkt from pkt's in-band
// FEC data (falling back to concealment when pkt has none), writing
// exactly len(pcm) samples: the lost packet's duration, a multiple of
// 2.5 ms. Call Decode(pkt) afterwards as usual. It does not allocate.
func (d *Decoder) DecodeFEC(pkt []byte, pcm []int16) (int, error) {
	if _, err := PacketSamples(pkt, d.rate); err != nil {
		return 0, err
	}
	if err := d.checkConceal(len(pcm)); err != nil {
		return 0, err
	}
	if err := d.dec.DecodeFEC(pkt, pcm[:len(pcm):len(pcm)]); err != nil {
		return 0, fmt.Errorf("%w: libopus fec: %v", ErrPacket, err)
	}
	d.last = len(pcm)
	return len(pcm), nil
}

// Conceal synthesises len(pcm) samples for a lost packet from the
// decoder's history (packet-loss concealment); len(pcm) must be a multiple
// of 2.5 ms. It does not allocate.
func (d *Decoder) Conceal(pcm []int16) (int, error) {
	if err := d.checkConceal(len(pcm)); err != nil {
		return 0, err
	}
	if err := d.dec.DecodePLC(pcm[:len(pcm):len(pcm)]); err != nil {
		return 0, fmt.Errorf("opus: conceal: %w", err)
	}
	d.last = len(pcm)
	return len(pcm), nil
}

func (d *Decoder) checkConceal(n int) error {
	step := d.rate / 400 // 2.5 ms
	if n <= 0 || n%step != 0 || n > d.rate*MaxPacketMS/1000 {
		return fmt.Errorf("%w: conceal %d samples, want a multiple of %d up to %d", ErrFrame, n, step, d.rate*MaxPacketMS/1000)
	}
	return nil
}

// MaxSamples is the largest packet's duration at the decoder's rate.
func (d *Decoder) MaxSamples() int { return d.rate * MaxPacketMS / 1000 }
