package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/robot-agent/robot-agent/codec/opus"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/uplink"
)

// audioCodecSection is the top-level YAML section choosing the audio codec
// offered to the gateway (docs/protocol.md section 15).
const audioCodecSection = "audio_codec"

// Values of audio_codec.opus.
const (
	opusAuto = "auto" // offer Opus when the binary has it, else PCM only (logged)
	opusOn   = "on"   // offer Opus; a binary without it refuses to start
	opusOff  = "off"  // PCM only
)

// audioCodecConfig is the audio_codec section.
type audioCodecConfig struct {
	// Opus is auto (default), on or off.
	Opus string `yaml:"opus"`
	// Bitrate is the mic's Opus bitrate in bit/s (VBR), unless the
	// gateway chooses another within BitrateMin..BitrateMax.
	Bitrate int `yaml:"bitrate"`
	// DTX offers discontinuous transmission (1-2 byte packets in silence;
	// worthwhile in continuous mode).
	DTX bool `yaml:"dtx"`
	// Down offers Opus for TTS too (default true).
	Down bool `yaml:"down"`
	// Gateway is what the embedded gateway (--sim) chooses: pcm (default)
	// or opus.
	Gateway string `yaml:"gateway"`
}

func defaultAudioCodec() audioCodecConfig {
	return audioCodecConfig{Opus: opusAuto, Bitrate: opus.DefaultUpBitrate, Down: true, Gateway: gateway.CodecPCM}
}

// loadAudioCodec reads and validates the audio_codec section. Every
// problem is reported, each a *field.Error under audio_codec.
func loadAudioCodec(cfg config.Config) (audioCodecConfig, error) {
	c := defaultAudioCodec()
	if _, err := config.DecodeSection(cfg.Extra, audioCodecSection, &c); err != nil {
		return c, err
	}
	return c, c.validate()
}

func (c audioCodecConfig) validate() error {
	var errs field.List
	const p = audioCodecSection + "."
	switch {
	case c.Opus != opusAuto && c.Opus != opusOn && c.Opus != opusOff:
		errs.Add(p+"opus", c.Opus, "want auto, on or off", "")
	case c.Opus == opusOn && !opus.Available():
		errs = append(errs, errNoOpus(c.Opus))
	}
	if c.Bitrate < opus.MinBitrate || c.Bitrate > opus.MaxBitrate {
		errs.Add(p+"bitrate", c.Bitrate, fmt.Sprintf("want %d..%d (bit/s)", opus.MinBitrate, opus.MaxBitrate), "")
	}
	switch {
	case c.Gateway != gateway.CodecPCM && c.Gateway != gateway.CodecOpus:
		errs.Add(p+"gateway", c.Gateway, "want pcm or opus", "")
	case c.Gateway == gateway.CodecOpus && !opus.Available():
		errs.Add(p+"gateway", c.Gateway, "this binary has no Opus codec", "build with cgo and -tags opus (libopus-dev installed), or set it to pcm")
	}
	return errs.Err()
}

// errNoOpus: audio_codec.opus asks for Opus in a binary without it.
func errNoOpus(v string) error {
	return field.New(audioCodecSection+".opus", v, "this binary has no Opus codec",
		"build with cgo and -tags opus (libopus-dev installed), or set it to auto")
}

// audioCodecs returns the uplink's codec offer (nil: PCM only). It fails
// for opus: on in a binary without Opus.
func (c audioCodecConfig) audioCodecs(frameMS int, log *slog.Logger) (*uplink.AudioCodecs, error) {
	switch {
	case c.Opus == opusOff:
		return nil, nil
	case !opus.Available() && c.Opus == opusOn:
		return nil, errNoOpus(c.Opus)
	case !opus.Available():
		log.Debug("audio: Opus not built into this binary; offering PCM only")
		return nil, nil
	}
	ac := &uplink.AudioCodecs{
		Offer: protocol.AudioOffer{Up: []protocol.AudioParams{{
			Format: protocol.FormatOpus, SampleRate: protocol.MicRate, Channels: 1,
			FrameMS: frameMS, Bitrate: c.Bitrate, BitrateMin: opus.MinBitrate, BitrateMax: opus.MaxBitrate, DTX: c.DTX,
		}}},
		NewMicEncoder: func(p protocol.AudioParams) (uplink.MicEncoder, error) {
			enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: p.SampleRate, FrameMS: p.FrameMS, Bitrate: p.Bitrate, DTX: p.DTX})
			if err != nil {
				return nil, err
			}
			return enc, nil
		},
	}
	if c.Down {
		ac.Offer.Down = []protocol.AudioParams{{Format: protocol.FormatOpus, SampleRate: protocol.TTSRate, Channels: 1, FEC: true}}
	}
	return ac, nil
}

// newOpusTTSDecoder makes the downlink decoder for a session.
func newOpusTTSDecoder() (uplink.PacketDecoder, error) {
	d, err := opus.NewDecoder(protocol.TTSRate)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// wrapTTSDecoder puts the TTS decoder in front of tts when Opus TTS is
// offered.
func wrapTTSDecoder(ac *uplink.AudioCodecs, tts uplink.TTSSink, reg *metrics.Registry, log *slog.Logger) uplink.TTSSink {
	if ac == nil || len(ac.Offer.Down) == 0 {
		return tts
	}
	return uplink.NewDecodingSink(tts, newOpusTTSDecoder, reg, log)
}

// ttsSeconds is how much TTS audio arrived: PCM bytes plus decoded samples.
func ttsSeconds(v func(string) int64) float64 {
	pcmBytes := v("robot_agent_uplink_tts_bytes_total") - v("robot_agent_tts_packet_bytes_total")
	return (float64(pcmBytes)/2 + float64(v("robot_agent_tts_decoded_samples_total"))) / 24000
}

// writeCodecSummary prints the negotiated codec and the bytes on the wire.
func (a *agent) writeCodecSummary(w io.Writer) {
	v := a.reg.Value
	fmt.Fprintf(w, "  wire:      mic %.1f KB sent (%s), tts %.1f KB received (%d packets, %d lost, %d concealed samples)\n",
		float64(v("robot_agent_uplink_mic_bytes_total"))/1000, a.codec.upDescription(),
		float64(v("robot_agent_uplink_tts_bytes_total"))/1000, v("robot_agent_tts_packets_total"),
		v("robot_agent_tts_lost_packets_total"), v("robot_agent_tts_concealed_samples_total"))
}

func (c audioCodecConfig) upDescription() string {
	if c.Opus == opusOff || !opus.Available() {
		return "pcm offered"
	}
	return fmt.Sprintf("opus offered at %d bit/s", c.Bitrate)
}
