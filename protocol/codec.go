package protocol

import (
	"fmt"
	"slices"
)

// Audio formats (AudioParams.Format, CodecOffer.Format).
const (
	// FormatPCM16LE is raw 16-bit little-endian PCM: the v1 format, always
	// supported, the default when nothing else is negotiated.
	FormatPCM16LE = "pcm16le"
	// FormatOpus is one Opus packet (RFC 6716) per media frame.
	FormatOpus = "opus"
)

// Uplink and downlink PCM rates (the robot's mic and speaker sides).
const (
	MicRate = 16000
	TTSRate = 24000
)

// Opus limits a gateway's choice must respect (section 15).
const (
	OpusMinBitrate = 500
	OpusMaxBitrate = 512000
	OpusMaxFrameMS = 120
)

// CodecOffer is one compressed audio format a robot can send (audio_codecs
// up) or receive (audio_codecs down), in hello. PCM (the v1 audio_up and
// audio_down) is always supported and is not listed.
type CodecOffer struct {
	Format     string `json:"format"`      // "opus"; receivers skip formats they do not know
	SampleRate int    `json:"sample_rate"` // the robot-side PCM rate: 16000 up, 24000 down
	Channels   int    `json:"channels"`    // 1
	// FrameMS lists the packet durations: up, those the robot can send (its
	// mic frame); down, those it decodes (empty: any up to 120 ms).
	FrameMS []int `json:"frame_ms,omitempty"`
	// Bitrate (up) is the robot's configured bitrate in bit/s, used when
	// the gateway does not choose one; BitrateMin..BitrateMax is the range
	// the gateway may choose from.
	Bitrate    int `json:"bitrate,omitempty"`
	BitrateMin int `json:"bitrate_min,omitempty"`
	BitrateMax int `json:"bitrate_max,omitempty"`
	// DTX (up): the robot can use discontinuous transmission and would
	// like to.
	DTX bool `json:"dtx,omitempty"`
	// FEC (down): the robot uses in-band FEC when the packets carry it.
	FEC bool `json:"fec,omitempty"`
}

// AudioCodecs is the robot hello's audio_codecs object: compressed formats
// offered per direction, in order of preference.
type AudioCodecs struct {
	Up   []CodecOffer `json:"up,omitempty"`
	Down []CodecOffer `json:"down,omitempty"`
}

// Offer returns the first offer of format in list, if any.
func Offer(list []CodecOffer, format string) (CodecOffer, bool) {
	for _, o := range list {
		if o.Format == format {
			return o, true
		}
	}
	return CodecOffer{}, false
}

func validateCodecs(c *AudioCodecs) error {
	if c == nil {
		return nil
	}
	for dir, list := range map[string][]CodecOffer{"up": c.Up, "down": c.Down} {
		for i, o := range list {
			f := fmt.Sprintf("audio_codecs.%s[%d]", dir, i)
			switch {
			case o.Format == "":
				return fmt.Errorf("%w: field %q is missing or empty", ErrMalformed, f+".format")
			case o.SampleRate <= 0:
				return fmt.Errorf("%w: field %q is %d, want > 0", ErrMalformed, f+".sample_rate", o.SampleRate)
			case o.Channels <= 0:
				return fmt.Errorf("%w: field %q is %d, want > 0", ErrMalformed, f+".channels", o.Channels)
			case o.Bitrate < 0 || o.BitrateMin < 0 || o.BitrateMax < 0:
				return fmt.Errorf("%w: field %q has a negative bitrate", ErrMalformed, f)
			case o.BitrateMax != 0 && o.BitrateMin > o.BitrateMax:
				return fmt.Errorf("%w: field %q: bitrate_min %d > bitrate_max %d", ErrMalformed, f, o.BitrateMin, o.BitrateMax)
			}
			for j, ms := range o.FrameMS {
				if ms <= 0 {
					return fmt.Errorf("%w: field %q is %d, want > 0", ErrMalformed, fmt.Sprintf("%s.frame_ms[%d]", f, j), ms)
				}
			}
		}
	}
	return nil
}

// validateChosen checks a gateway hello's audio_up / audio_down (the
// formats the gateway chose) on their own; CheckChoice then checks them
// against what the robot offered. An empty format means PCM (a v1 gateway
// that leaves audio_up out).
func validateChosen(field string, p AudioParams, rate int, required bool) error {
	switch p.Format {
	case "":
		if required {
			return fmt.Errorf("%w: field %q format is missing, want pcm16le or opus", ErrUnsupported, field)
		}
		return nil
	case FormatPCM16LE:
		return validateAudio(field, p, rate)
	case FormatOpus:
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
	return fmt.Errorf("%w: field %q format %q, want pcm16le or opus", ErrUnsupported, field, p.Format)
}

// ErrNotOffered wraps ErrUnsupported: the gateway chose a format or a
// parameter the robot did not offer.
var ErrNotOffered = fmt.Errorf("%w audio format", ErrUnsupported)

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

// CheckChoice is the robot's check of the gateway hello's audio_up and
// audio_down against its own hello (section 15.3). It returns the session
// audio: PCM for a direction the gateway left as PCM or did not mention
// (v1 gateways), the chosen Opus parameters otherwise, with the robot's
// own frame size, bitrate and DTX filled in where the gateway left them
// out. A choice the robot did not offer is an error wrapping ErrNotOffered
// that names the field and value.
func CheckChoice(robot *RobotHello, gw *GatewayHello) (SessionAudio, error) {
	sa := PCMAudio(robot.AudioUp.FrameMS)
	var offers AudioCodecs
	if robot.AudioCodecs != nil {
		offers = *robot.AudioCodecs
	}
	if gw.AudioUp.Format == FormatOpus {
		o, ok := Offer(offers.Up, FormatOpus)
		if !ok {
			return sa, fmt.Errorf("%w: gateway chose audio_up opus, but the robot offered only pcm16le up", ErrNotOffered)
		}
		up := gw.AudioUp
		if up.SampleRate != o.SampleRate {
			return sa, fmt.Errorf("%w: gateway chose audio_up.sample_rate %d, offered %d", ErrNotOffered, up.SampleRate, o.SampleRate)
		}
		if up.FrameMS == 0 && len(o.FrameMS) > 0 {
			up.FrameMS = o.FrameMS[0]
		}
		if len(o.FrameMS) > 0 && !slices.Contains(o.FrameMS, up.FrameMS) {
			return sa, fmt.Errorf("%w: gateway chose audio_up.frame_ms %d, offered %v", ErrNotOffered, up.FrameMS, o.FrameMS)
		}
		if up.Bitrate == 0 {
			up.Bitrate = o.Bitrate
		}
		if (o.BitrateMin != 0 && up.Bitrate < o.BitrateMin) || (o.BitrateMax != 0 && up.Bitrate > o.BitrateMax) {
			return sa, fmt.Errorf("%w: gateway chose audio_up.bitrate %d, offered %d..%d", ErrNotOffered, up.Bitrate, o.BitrateMin, o.BitrateMax)
		}
		if up.DTX && !o.DTX {
			return sa, fmt.Errorf("%w: gateway chose audio_up.dtx, not offered", ErrNotOffered)
		}
		sa.Up = up
	}
	if gw.AudioDown.Format == FormatOpus {
		o, ok := Offer(offers.Down, FormatOpus)
		if !ok {
			return sa, fmt.Errorf("%w: gateway chose audio_down opus, but the robot offered only pcm16le down", ErrNotOffered)
		}
		if gw.AudioDown.SampleRate != o.SampleRate {
			return sa, fmt.Errorf("%w: gateway chose audio_down.sample_rate %d, offered %d", ErrNotOffered, gw.AudioDown.SampleRate, o.SampleRate)
		}
		if len(o.FrameMS) > 0 && gw.AudioDown.FrameMS != 0 && !slices.Contains(o.FrameMS, gw.AudioDown.FrameMS) {
			return sa, fmt.Errorf("%w: gateway chose audio_down.frame_ms %d, offered %v", ErrNotOffered, gw.AudioDown.FrameMS, o.FrameMS)
		}
		sa.Down = gw.AudioDown
	}
	return sa, nil
}

// AudioPolicy is what a gateway wants: which directions it would take as
// Opus, and at which uplink bitrate (0: the robot's).
type AudioPolicy struct {
	OpusUp, OpusDown bool
	UpBitrate        int
	DownFrameMS      int  // packet duration the gateway's encoder uses (default 20)
	DownBitrate      int  // bitrate of the gateway's encoder (informative)
	DownFEC          bool // the gateway's encoder adds in-band FEC (informative)
	UpDTX            bool // accept DTX when the robot offers it
}

// ChooseAudio is a gateway's side of the negotiation (section 15.2): Opus
// for each direction the policy wants and the robot offers, PCM otherwise.
// It returns the gateway hello's audio_up and audio_down.
func ChooseAudio(robot *RobotHello, p AudioPolicy) (up, down AudioParams) {
	up = AudioParams{Format: FormatPCM16LE, SampleRate: MicRate, Channels: 1, FrameMS: robot.AudioUp.FrameMS}
	down = AudioParams{Format: FormatPCM16LE, SampleRate: TTSRate, Channels: 1}
	if robot.AudioCodecs == nil {
		return up, down
	}
	if o, ok := Offer(robot.AudioCodecs.Up, FormatOpus); ok && p.OpusUp && o.SampleRate == MicRate && o.Channels == 1 {
		up = AudioParams{Format: FormatOpus, SampleRate: MicRate, Channels: 1, Bitrate: o.Bitrate, DTX: o.DTX && p.UpDTX}
		if len(o.FrameMS) > 0 {
			up.FrameMS = o.FrameMS[0]
		}
		if b := p.UpBitrate; b != 0 {
			if o.BitrateMin != 0 {
				b = max(b, o.BitrateMin)
			}
			if o.BitrateMax != 0 {
				b = min(b, o.BitrateMax)
			}
			up.Bitrate = b
		}
	}
	if o, ok := Offer(robot.AudioCodecs.Down, FormatOpus); ok && p.OpusDown && o.SampleRate == TTSRate && o.Channels == 1 {
		ms := p.DownFrameMS
		if ms == 0 {
			ms = 20
		}
		if len(o.FrameMS) == 0 || slices.Contains(o.FrameMS, ms) {
			down = AudioParams{Format: FormatOpus, SampleRate: TTSRate, Channels: 1, FrameMS: ms, Bitrate: p.DownBitrate, FEC: p.DownFEC && o.FEC}
		}
	}
	return up, down
}

// ParseFrame is ParseHeader for a negotiated session: a direction that
// carries Opus takes payloads of any length (one Opus packet; empty means
// no audio), a PCM direction keeps the whole-sample check.
func (a SessionAudio) ParseFrame(msg []byte) (Header, []byte, error) {
	return parseHeader(msg, !a.UpOpus(), !a.DownOpus())
}
