package uplink

import (
	"fmt"
	"log/slog"

	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// PacketDecoder decodes one direction's packets to 24 kHz mono PCM and
// conceals lost ones. codec/opus.Decoder implements it. None of the methods
// may allocate.
type PacketDecoder interface {
	// Decode decodes pkt into pcm (MaxSamples long) and returns the
	// samples written.
	Decode(pkt []byte, pcm []int16) (int, error)
	// DecodeFEC recovers the packet lost just before pkt (len(pcm)
	// samples) from pkt's in-band FEC, or conceals it.
	DecodeFEC(pkt []byte, pcm []int16) (int, error)
	// Conceal synthesises len(pcm) samples for a lost packet.
	Conceal(pcm []int16) (int, error)
	// LastSamples is the duration of the last packet decoded or concealed.
	LastSamples() int
	// MaxSamples is the longest packet's duration.
	MaxSamples() int
}

// MaxConcealMS bounds the audio a DecodingSink synthesises for one gap in
// the TTS sequence numbers (beyond it the codec's concealment has faded
// out anyway); the rest of a gap up to MaxGapMS is filled with silence, so
// the response keeps its timeline (and samples_played the gateway's). A
// larger gap is not treated as loss.
const (
	MaxConcealMS = 120
	MaxGapMS     = 1000
)

// DecodingSink sits in front of a PCM TTSSink (the player): in a session
// that negotiated compressed TTS it decodes each TTS frame's packet and
// pushes the PCM, concealing packets lost in between (a gap in the frames'
// sequence numbers within one response: packet-loss concealment, and the
// next packet's in-band FEC for the last lost one). Everything else
// (PushPCM for PCM sessions and JSON tts, EndResponse, Interrupt,
// ResetSession) goes straight to the inner sink, so interrupts and
// generations are the player's, unchanged.
//
// Every packet is decoded, even one the player will refuse as stale, so
// that the decoder state follows the gateway's encoder (docs/protocol.md
// 15.3).
//
// # Concurrency
//
// PushPacket, PushPCM, EndResponse, ResetSession and SetDownFormat are
// called by the read pump / session goroutine (never concurrently);
// Interrupt from any goroutine (it only forwards). PushPacket does not
// block or allocate.
type DecodingSink struct {
	TTSSink
	newDecoder func() (PacketDecoder, error)
	log        *slog.Logger

	dec      PacketDecoder
	format   string
	pcm      []int16
	le       []byte
	maxConc  int
	haveSeq  bool
	lastSeq  uint32
	lastResp uint32

	packets, badPackets, concealed, fecFrames, lostPackets *metrics.Counter
	packetBytes, decoded                                   *metrics.Counter
}

// NewDecodingSink wraps inner. newDecoder makes a fresh decoder for each
// session that negotiates compressed TTS (called on the session goroutine,
// not on the fast lane).
func NewDecodingSink(inner TTSSink, newDecoder func() (PacketDecoder, error), reg *metrics.Registry, log *slog.Logger) *DecodingSink {
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &DecodingSink{
		TTSSink: inner, newDecoder: newDecoder, log: log,
		format:      protocol.FormatPCM16LE,
		maxConc:     protocol.TTSRate * MaxConcealMS / 1000,
		packets:     reg.Counter("robot_agent_tts_packets_total", "Compressed TTS packets decoded."),
		badPackets:  reg.Counter("robot_agent_tts_bad_packets_total", "Compressed TTS packets that could not be decoded."),
		lostPackets: reg.Counter("robot_agent_tts_lost_packets_total", "TTS packets missing (gaps in the frames' sequence numbers within a response)."),
		concealed:   reg.Counter("robot_agent_tts_concealed_samples_total", "TTS samples synthesised for lost packets (PLC and FEC)."),
		fecFrames:   reg.Counter("robot_agent_tts_fec_recovered_total", "Lost TTS packets concealed with the next packet's in-band FEC (PLC when it carries none)."),
		packetBytes: reg.Counter("robot_agent_tts_packet_bytes_total", "Compressed TTS packet bytes received."),
		decoded:     reg.Counter("robot_agent_tts_decoded_samples_total", "TTS samples decoded from packets (concealment excluded)."),
	}
}

// SetDownFormat implements PacketSink: a fresh decoder for a compressed
// session, none for PCM.
func (s *DecodingSink) SetDownFormat(p protocol.AudioParams) error {
	s.haveSeq = false
	s.format = p.Format
	if p.Format == protocol.FormatPCM16LE || p.Format == "" {
		s.dec = nil
		return nil
	}
	dec, err := s.newDecoder()
	if err != nil {
		return fmt.Errorf("uplink: %s TTS decoder: %w", p.Format, err)
	}
	s.dec = dec
	if n := dec.MaxSamples(); len(s.pcm) < n {
		s.pcm = make([]int16, n)
		s.le = make([]byte, 2*n)
	}
	return nil
}

// PushPacket implements PacketSink.
func (s *DecodingSink) PushPacket(responseID, seq uint32, pkt []byte) error {
	if s.dec == nil {
		s.badPackets.Inc()
		return fmt.Errorf("%w: %s TTS frame in a session without a decoder", errBadPacket, s.format)
	}
	var cerr error
	if s.haveSeq && responseID == s.lastResp {
		if gap := seq - s.lastSeq - 1; gap > 0 && gap < 1<<31 {
			cerr = s.conceal(responseID, int(min(gap, 1<<16)), pkt)
		}
	}
	s.haveSeq, s.lastSeq, s.lastResp = true, seq, responseID
	n, err := s.dec.Decode(pkt, s.pcm)
	if err != nil {
		s.badPackets.Inc()
		return fmt.Errorf("%w: response %d seq %d: %v", errBadPacket, responseID, seq, err)
	}
	s.packets.Inc()
	s.packetBytes.Add(int64(len(pkt)))
	s.decoded.Add(int64(n))
	if err := s.push(responseID, s.pcm[:n]); err != nil {
		return err
	}
	return cerr
}

// conceal synthesises lost packets before pkt: PLC for all but the last,
// FEC from pkt for the last (libopus falls back to PLC without FEC data),
// at most MaxConcealMS in all.
func (s *DecodingSink) conceal(id uint32, lost int, next []byte) error {
	s.lostPackets.Add(int64(lost))
	dur := s.dec.LastSamples()
	if dur <= 0 || dur > len(s.pcm) || lost*dur > protocol.TTSRate*MaxGapMS/1000 {
		return nil
	}
	fits := s.maxConc / dur
	for k := 1; k <= lost; k++ {
		buf := s.pcm[:dur]
		n, err := dur, error(nil)
		switch {
		case k == lost && k <= fits:
			if n, err = s.dec.DecodeFEC(next, buf); err == nil {
				s.fecFrames.Inc()
			}
		case k <= fits:
			n, err = s.dec.Conceal(buf)
		default: // beyond what the codec conceals: silence
			clear(buf)
		}
		if err != nil {
			return nil // the packet itself will report what is wrong
		}
		s.concealed.Add(int64(n))
		if err := s.push(id, buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

func (s *DecodingSink) push(id uint32, samples []int16) error {
	b := s.le[:2*len(samples)]
	pcm.Int16ToBytes(b, samples)
	return s.TTSSink.PushPCM(id, b)
}

var _ PacketSink = (*DecodingSink)(nil)
