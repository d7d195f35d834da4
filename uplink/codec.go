package uplink

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// MicEncoder compresses one mic frame (16 kHz mono PCM) into one packet.
// codec/opus.Encoder implements it. Used by the write pump only.
type MicEncoder interface {
	// Encode encodes exactly FrameSamples samples into dst and returns
	// the packet length; it must not allocate.
	Encode(pcm []int16, dst []byte) (int, error)
	FrameSamples() int
	// Reset starts a new stream (a new session).
	Reset() error
}

// AudioCodecs lets a Client offer compressed audio in its hello
// (docs/protocol.md §3.9, §17) and speak what the gateway chooses.
type AudioCodecs struct {
	// Offer lists the compressed formats, most preferred first; the
	// hello's audio offer is these followed by the PCM formats.
	Offer protocol.AudioOffer
	// NewMicEncoder returns the uplink encoder for the chosen parameters
	// (nil if the offer has no up formats). It is called on the session
	// goroutine when a session negotiates compressed mic audio, not on
	// the fast lane.
	NewMicEncoder func(p protocol.AudioParams) (MicEncoder, error)
}

// PacketSink is a TTSSink that also plays compressed TTS frames
// (NewDecodingSink). A Client whose Config offers compressed downlink
// audio must be given one.
type PacketSink interface {
	TTSSink
	// SetDownFormat is called on the session goroutine when a session
	// starts, before ResetSession and before the read pump runs, with the
	// negotiated downlink format.
	SetDownFormat(p protocol.AudioParams) error
	// PushPacket decodes one TTS frame's packet (seq is the frame's
	// sequence number, used to detect lost packets) and pushes the PCM.
	// Read pump only; must not block or allocate.
	PushPacket(responseID, seq uint32, pkt []byte) error
}

// micCodec is the write pump's encoder state.
type micCodec struct {
	enc     MicEncoder
	params  protocol.AudioParams
	pcm     []int16
	out     []byte
	errors  *metrics.Counter
	lastErr error
}

// audioOffer returns the hello's v1.1 audio offer: the configured codecs,
// then the v1 PCM formats.
func (c *Client) audioOffer(h *protocol.RobotHello) *protocol.AudioOffer {
	o := &protocol.AudioOffer{Up: []protocol.AudioParams{h.AudioUp}, Down: h.AudioDown}
	if cs := c.cfg.Codecs; cs != nil {
		o.Up = append(append([]protocol.AudioParams(nil), cs.Offer.Up...), o.Up...)
		o.Down = append(append([]protocol.AudioParams(nil), cs.Offer.Down...), o.Down...)
	}
	return o
}

// negotiate checks the gateway's audio choice against the hello sent and
// prepares the encoder and the TTS sink for it. Session goroutine, before
// the pumps start.
func (c *Client) negotiate(hello *protocol.RobotHello, gh *protocol.GatewayHello) error {
	sa, err := protocol.NegotiateAudio(hello, gh)
	if err != nil {
		return err
	}
	if sa.UpOpus() {
		if err := c.prepareMicEncoder(sa.Up); err != nil {
			return err
		}
	}
	ps, isPS := c.tts.(PacketSink)
	if sa.DownOpus() && !isPS {
		return fmt.Errorf("uplink: gateway chose %s TTS but the TTS sink plays PCM only", sa.Down.Format)
	}
	if isPS {
		if err := ps.SetDownFormat(sa.Down); err != nil {
			return err
		}
	}
	c.audio = sa
	c.log.Info("uplink: audio negotiated", "up", describeAudio(sa.Up), "down", describeAudio(sa.Down))
	return nil
}

func describeAudio(p protocol.AudioParams) string {
	if p.Format == protocol.FormatOpus {
		s := fmt.Sprintf("opus %d Hz %d ms", p.SampleRate, p.FrameMS)
		if p.Bitrate != 0 {
			s += fmt.Sprintf(" %d bit/s", p.Bitrate)
		}
		if p.DTX {
			s += " dtx"
		}
		if p.FEC {
			s += " fec"
		}
		return s
	}
	return fmt.Sprintf("%s %d Hz", p.Format, p.SampleRate)
}

func (c *Client) prepareMicEncoder(p protocol.AudioParams) error {
	mc := &c.micEnc
	if mc.enc != nil && mc.params == p {
		return mc.enc.Reset()
	}
	if c.cfg.Codecs == nil || c.cfg.Codecs.NewMicEncoder == nil {
		return fmt.Errorf("uplink: gateway chose %s mic audio but no encoder is configured", p.Format)
	}
	enc, err := c.cfg.Codecs.NewMicEncoder(p)
	if err != nil {
		return fmt.Errorf("uplink: mic encoder for %s: %w", describeAudio(p), err)
	}
	*mc = micCodec{
		enc: enc, params: p,
		pcm:    make([]int16, enc.FrameSamples()),
		out:    make([]byte, protocol.HeaderSize+maxPacket),
		errors: mc.errors,
	}
	return nil
}

// maxPacket is the largest packet a MicEncoder may write (one Opus frame).
const maxPacket = 1275

// encodeMic turns a queued PCM mic frame (header + PCM16LE) into header +
// packet. Frames shorter than the encoder's frame are padded with silence;
// an empty frame (a closing end flag) stays empty. On failure it returns
// false and the frame is not sent (counted, logged once per error text).
// Write pump only; does not allocate.
func (c *Client) encodeMic(f []byte) ([]byte, bool) {
	mc := &c.micEnc
	payload := f[protocol.HeaderSize:]
	if len(payload) == 0 {
		return f, true
	}
	n := len(payload) / 2
	if n > len(mc.pcm) {
		mc.errors.Inc()
		c.logEncodeError(fmt.Errorf("uplink: mic frame of %d samples, encoder frame is %d", n, len(mc.pcm)))
		return nil, false
	}
	pcm.BytesToInt16(mc.pcm, payload)
	clear(mc.pcm[n:])
	m, err := mc.enc.Encode(mc.pcm, mc.out[protocol.HeaderSize:])
	if err != nil {
		mc.errors.Inc()
		c.logEncodeError(err)
		return nil, false
	}
	copy(mc.out, f[:protocol.HeaderSize])
	binary.LittleEndian.PutUint32(mc.out[20:], uint32(m))
	return mc.out[:protocol.HeaderSize+m], true
}

func (c *Client) logEncodeError(err error) {
	mc := &c.micEnc
	if mc.lastErr == nil || mc.lastErr.Error() != err.Error() {
		mc.lastErr = err
		c.log.Warn("uplink: mic frame not encoded, dropped", "err", err)
	}
}

// pushTTSPacket hands a compressed TTS frame to the sink. Read pump only.
func (c *Client) pushTTSPacket(h protocol.Header, pkt []byte) {
	ps := c.tts.(PacketSink) // checked by negotiate
	c.refused(h.Stream, ps.PushPacket(h.Stream, h.Seq, pkt))
}

// errBadPacket marks sink errors that are the packet's fault.
var errBadPacket = errors.New("uplink: undecodable packet")
