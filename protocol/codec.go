package protocol

import (
	"fmt"
)

// FormatOpus is one Opus packet (RFC 6716) per media frame (§17).
const FormatOpus = "opus"

// Uplink and downlink PCM rates (the robot's mic and speaker sides).
const (
	MicRate = 16000
	TTSRate = 24000
)

// Opus limits a gateway's choice must respect (§17).
const (
	OpusMinBitrate = 500
	OpusMaxBitrate = 512000
	OpusMaxFrameMS = 120
)

// validateOffers checks the Opus parameters of a robot's audio offer: a
// bitrate range that is not inverted, no negative values.
func validateOffers(o *AudioOffer) error {
	for dir, list := range map[string][]AudioParams{"up": o.Up, "down": o.Down} {
		for i, p := range list {
			f := fmt.Sprintf("audio.%s[%d]", dir, i)
			switch {
			case p.FrameMS < 0:
				return fmt.Errorf("%w: field %q is %d, want >= 0", ErrMalformed, f+".frame_ms", p.FrameMS)
			case p.Bitrate < 0 || p.BitrateMin < 0 || p.BitrateMax < 0:
				return fmt.Errorf("%w: field %q has a negative bitrate", ErrMalformed, f)
			case p.BitrateMax != 0 && p.BitrateMin > p.BitrateMax:
				return fmt.Errorf("%w: field %q: bitrate_min %d > bitrate_max %d", ErrMalformed, f, p.BitrateMin, p.BitrateMax)
			}
		}
	}
	return nil
}

// validateChosen checks the parameters of a gateway's audio choice on
// their own (Negotiate and NegotiateAudio then check them against the
// offer): an Opus choice must be mono at the direction's PCM rate, with a
// frame of at most 120 ms and a sane bitrate.
func validateChosen(field string, p AudioParams, rate int) error {
	if p.Format != FormatOpus {
		return nil
	}
	if p.SampleRate != rate || p.Channels != 1 {
		return fmt.Errorf("%w: field %q is opus %d Hz x %d channels, want %d Hz mono", ErrUnsupported, field, p.SampleRate, p.Channels, rate)
	}
	if p.FrameMS < 0 || p.FrameMS > OpusMaxFrameMS {
		return fmt.Errorf("%w: field %q frame_ms %d, want 0..%d", ErrUnsupported, field, p.FrameMS, OpusMaxFrameMS)
	}
	if p.Bitrate != 0 && (p.Bitrate < OpusMinBitrate || p.Bitrate > OpusMaxBitrate) {
		return fmt.Errorf("%w: field %q bitrate %d, want %d..%d", ErrUnsupported, field, p.Bitrate, OpusMinBitrate, OpusMaxBitrate)
	}
	return nil
}

// SessionAudio is the audio format of each direction of a session, as
// negotiated in hello.
type SessionAudio struct {
	Up   AudioParams // mic frames (kind 1)
	Down AudioParams // TTS frames (kind 3)
}

// PCMAudio is the v1 session audio: PCM both ways.
func PCMAudio(frameMS int) SessionAudio {
	return SessionAudio{
		Up:   AudioParams{Format: FormatPCM16LE, SampleRate: MicRate, Channels: 1, FrameMS: frameMS},
		Down: AudioParams{Format: FormatPCM16LE, SampleRate: TTSRate, Channels: 1},
	}
}

// UpOpus reports whether mic frames carry Opus packets.
func (a SessionAudio) UpOpus() bool { return a.Up.Format == FormatOpus }

// DownOpus reports whether TTS frames carry Opus packets.
func (a SessionAudio) DownOpus() bool { return a.Down.Format == FormatOpus }

// ParseFrame is ParseHeader for a negotiated session: a direction that
// carries Opus takes payloads of any length (one Opus packet; empty means
// no audio), a PCM direction keeps the whole-sample check.
func (a SessionAudio) ParseFrame(msg []byte) (Header, []byte, error) {
	return parseHeader(msg, !a.UpOpus(), !a.DownOpus())
}

// matchOffer returns the offer entry p was taken from.
func matchOffer(list []AudioParams, p AudioParams) (AudioParams, bool) {
	for _, o := range list {
		if o.Format == p.Format && o.SampleRate == p.SampleRate && o.Channels == p.Channels {
			return o, true
		}
	}
	return AudioParams{}, false
}

// NegotiateAudio is the robot's side of the audio negotiation (§3.9,
// §17.2): Negotiate's choice of formats, then the Opus parameters checked
// against the offer entry they were taken from, with the robot's own frame
// size and bitrate filled in where the gateway left them out. A choice the
// robot did not offer is an error wrapping ErrUnsupported naming the field.
func NegotiateAudio(r *RobotHello, g *GatewayHello) (SessionAudio, error) {
	n, err := Negotiate(r, g, Keepalive{})
	if err != nil {
		return PCMAudio(r.AudioUp.FrameMS), err
	}
	sa := SessionAudio{Up: n.AudioUp, Down: n.AudioDown}
	if r.Audio == nil {
		return sa, nil
	}
	if sa.UpOpus() {
		o, _ := matchOffer(r.Audio.Up, sa.Up)
		up := g.Audio.Up
		if up.FrameMS == 0 {
			up.FrameMS = o.FrameMS
		}
		if o.FrameMS != 0 && up.FrameMS != o.FrameMS {
			return sa, fmt.Errorf("%w: field \"audio.up.frame_ms\" %d, the robot offered %d", ErrUnsupported, up.FrameMS, o.FrameMS)
		}
		if up.Bitrate == 0 {
			up.Bitrate = o.Bitrate
		}
		if (o.BitrateMin != 0 && up.Bitrate < o.BitrateMin) || (o.BitrateMax != 0 && up.Bitrate > o.BitrateMax) {
			return sa, fmt.Errorf("%w: field \"audio.up.bitrate\" %d, the robot offered %d..%d", ErrUnsupported, up.Bitrate, o.BitrateMin, o.BitrateMax)
		}
		if up.DTX && !o.DTX {
			return sa, fmt.Errorf("%w: field \"audio.up.dtx\" is true, the robot did not offer dtx", ErrUnsupported)
		}
		up.BitrateMin, up.BitrateMax = 0, 0
		sa.Up = up
	}
	if sa.DownOpus() {
		o, _ := matchOffer(r.Audio.Down, sa.Down)
		if o.FrameMS != 0 && sa.Down.FrameMS != 0 && sa.Down.FrameMS != o.FrameMS {
			return sa, fmt.Errorf("%w: field \"audio.down.frame_ms\" %d, the robot offered %d", ErrUnsupported, sa.Down.FrameMS, o.FrameMS)
		}
	}
	return sa, nil
}

// AudioPolicy is what a gateway wants: which directions it would take as
// Opus, and its parameters.
type AudioPolicy struct {
	OpusUp, OpusDown bool
	UpBitrate        int  // 0: the robot's
	UpDTX            bool // accept DTX when the robot offers it
	DownFrameMS      int  // packet duration the gateway's encoder uses (default 20)
	DownBitrate      int  // the gateway's encoder bitrate (informative)
	DownFEC          bool // the gateway's encoder adds in-band FEC (informative)
}

// ChooseAudio is a gateway's side of the negotiation (§17.2): Opus for each
// direction the policy wants and the robot offers, PCM otherwise. It
// returns the gateway hello's audio choice, or nil for a robot that sent
// no audio offer (a v1.0 robot: PCM both ways, no choice sent).
func ChooseAudio(r *RobotHello, p AudioPolicy) *AudioChoice {
	if r.Audio == nil {
		return nil
	}
	pcm := PCMAudio(r.AudioUp.FrameMS)
	c := &AudioChoice{Up: pcm.Up, Down: pcm.Down}
	if o, ok := matchOffer(r.Audio.Up, AudioParams{Format: FormatOpus, SampleRate: MicRate, Channels: 1}); ok && p.OpusUp {
		up := AudioParams{Format: FormatOpus, SampleRate: MicRate, Channels: 1, FrameMS: o.FrameMS, Bitrate: o.Bitrate, DTX: o.DTX && p.UpDTX}
		if b := p.UpBitrate; b != 0 {
			if o.BitrateMin != 0 {
				b = max(b, o.BitrateMin)
			}
			if o.BitrateMax != 0 {
				b = min(b, o.BitrateMax)
			}
			up.Bitrate = b
		}
		if validateChosen("audio.up", up, MicRate) == nil {
			c.Up = up
		}
	}
	if o, ok := matchOffer(r.Audio.Down, AudioParams{Format: FormatOpus, SampleRate: TTSRate, Channels: 1}); ok && p.OpusDown {
		ms := p.DownFrameMS
		if ms == 0 {
			ms = 20
		}
		if o.FrameMS == 0 || o.FrameMS == ms {
			c.Down = AudioParams{Format: FormatOpus, SampleRate: TTSRate, Channels: 1, FrameMS: ms, Bitrate: p.DownBitrate, FEC: p.DownFEC && o.FEC}
		}
	}
	return c
}
