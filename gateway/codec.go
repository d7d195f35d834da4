package gateway

import (
	"cmp"
	"fmt"

	"github.com/robot-agent/robot-agent/codec/opus"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/protocol"
)

// Codec choices for Config.Codec.
const (
	CodecPCM  = "pcm"  // PCM both ways whatever the robot offers (a v1 gateway)
	CodecOpus = "opus" // Opus for each direction the robot offers it (needs the opus build)
)

// validateCodec checks Config.Codec: opus needs the codec built in.
func validateCodec(c string) error {
	switch c {
	case "", CodecPCM:
		return nil
	case CodecOpus:
		if !opus.Available() {
			return fmt.Errorf("gateway: codec opus, but this binary has no Opus codec (build with cgo and -tags opus, libopus-dev installed)")
		}
		return nil
	}
	return fmt.Errorf("gateway: codec %q is not pcm or opus", c)
}

// sessionCodec is a session's Opus state: the mic decoder (read goroutine)
// and the TTS encoder (the one streaming goroutine, under streamMu).
type sessionCodec struct {
	audio protocol.SessionAudio

	micDec   *opus.Decoder
	micPCM   []int16
	micLE    []byte
	micSeq   uint32
	micUtt   uint32
	micValid bool

	ttsEnc  *opus.Encoder
	ttsPkt  []byte
	ttsPend []int16 // samples waiting for a whole packet
}

// negotiate chooses the session's audio from the robot's hello and sets up
// the codecs. A codec that cannot be created falls back to PCM for that
// direction (logged).
func (s *Server) negotiate(hello *protocol.RobotHello) (sessionCodec, *protocol.GatewayHello) {
	want := s.cfg.Codec == CodecOpus && opus.Available()
	pol := protocol.AudioPolicy{OpusUp: want, OpusDown: want, UpBitrate: s.cfg.OpusUpBitrate,
		DownFrameMS: 20, DownBitrate: s.cfg.OpusDownBitrate, DownFEC: true, UpDTX: true}
	choice := protocol.ChooseAudio(hello, pol)
	v1 := protocol.PCMAudio(hello.AudioUp.FrameMS)
	up, down := v1.Up, v1.Down
	if choice != nil {
		up, down = choice.Up, choice.Down
	}
	var sc sessionCodec
	if up.Format == protocol.FormatOpus {
		dec, err := opus.NewDecoder(protocol.MicRate)
		if err != nil {
			s.log.Warn("gateway: no Opus mic decoder, choosing PCM up", "err", err)
			up = protocol.PCMAudio(hello.AudioUp.FrameMS).Up
		} else {
			sc.micDec = dec
			sc.micPCM = make([]int16, dec.MaxSamples())
			sc.micLE = make([]byte, 2*dec.MaxSamples())
		}
	}
	if down.Format == protocol.FormatOpus {
		enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: protocol.TTSRate, FrameMS: down.FrameMS,
			Bitrate: cmp.Or(down.Bitrate, opus.DefaultDownBitrate), FEC: down.FEC})
		if err != nil {
			s.log.Warn("gateway: no Opus TTS encoder, choosing PCM down", "err", err)
			down = protocol.PCMAudio(0).Down
		} else {
			sc.ttsEnc = enc
			sc.ttsPkt = make([]byte, opus.MaxPacket)
			down.Bitrate = enc.Config().Bitrate
		}
	}
	sc.audio = protocol.SessionAudio{Up: up, Down: down}
	gh := &protocol.GatewayHello{Protocol: protocol.Version, AudioUp: v1.Up, AudioDown: v1.Down, Minor: protocol.MinorVersion}
	if choice != nil {
		gh.Audio = &protocol.AudioChoice{Up: up, Down: down}
	}
	return sc, gh
}

// decodeMic turns a mic frame's Opus packet into PCM16LE, concealing
// packets lost within the utterance (seq gaps) first. The returned bytes
// are valid until the next call. Read goroutine only.
func (sc *sessionCodec) decodeMic(h protocol.Header, pkt []byte) ([]byte, error) {
	out := sc.micLE[:0]
	if len(pkt) == 0 {
		return out, nil
	}
	if sc.micValid && h.Stream == sc.micUtt {
		if gap := h.Seq - sc.micSeq - 1; gap > 0 && gap < 1<<31 {
			dur := sc.micDec.LastSamples()
			budget := protocol.MicRate * 120 / 1000
			for k := uint32(1); k <= gap && int(k)*dur <= budget; k++ {
				var n int
				var err error
				if k == gap {
					n, err = sc.micDec.DecodeFEC(pkt, sc.micPCM[:dur])
				} else {
					n, err = sc.micDec.Conceal(sc.micPCM[:dur])
				}
				if err != nil {
					break
				}
				out = appendLE(out, sc.micPCM[:n])
			}
		}
	}
	sc.micValid, sc.micSeq, sc.micUtt = true, h.Seq, h.Stream
	n, err := sc.micDec.Decode(pkt, sc.micPCM)
	if err != nil {
		return nil, fmt.Errorf("%w: mic opus packet (utterance %d seq %d): %v", protocol.ErrMalformed, h.Stream, h.Seq, err)
	}
	return appendLE(out, sc.micPCM[:n]), nil
}

func appendLE(b []byte, samples []int16) []byte {
	n := len(b)
	b = append(b, make([]byte, 2*len(samples))...)
	pcm.Int16ToBytes(b[n:], samples)
	return b
}

// encodeTTS encodes pcm (24 kHz) into whole packets, keeping a partial
// packet for the next call; last pads it with silence and flushes it.
func (sc *sessionCodec) encodeTTS(pcm []int16, last bool, emit func(pkt []byte, final bool) bool) bool {
	fs := sc.ttsEnc.FrameSamples()
	sc.ttsPend = append(sc.ttsPend, pcm...)
	if last && len(sc.ttsPend)%fs != 0 {
		sc.ttsPend = append(sc.ttsPend, make([]int16, fs-len(sc.ttsPend)%fs)...)
	}
	var off int
	for off+fs <= len(sc.ttsPend) {
		n, err := sc.ttsEnc.Encode(sc.ttsPend[off:off+fs], sc.ttsPkt)
		if err != nil {
			return false
		}
		off += fs
		if !emit(sc.ttsPkt[:n], last && off == len(sc.ttsPend)) {
			sc.ttsPend = sc.ttsPend[:0]
			return false
		}
	}
	sc.ttsPend = append(sc.ttsPend[:0], sc.ttsPend[off:]...)
	return true
}

// WireStats is what the gateway counted on the wire: mic frames received
// and TTS frames sent (whole binary messages, header included).
type WireStats struct {
	MicBytes, MicFrames int64
	TTSBytes, TTSFrames int64
}

// WireStats returns the counts so far, over all sessions.
func (s *Server) WireStats() WireStats {
	return WireStats{MicBytes: s.m.micBytes.Value(), MicFrames: s.m.micFrames.Value(),
		TTSBytes: s.m.ttsBytes.Value(), TTSFrames: s.m.ttsFrames.Value()}
}
