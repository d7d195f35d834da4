package main

import (
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/hw/portaudio"
)

// audioDevicesSection is the top-level YAML section configuring the real
// (PortAudio) microphone and speaker; see docs/audio.md.
const audioDevicesSection = "audio_devices"

// Half-duplex modes.
const (
	halfDuplexGate = "gate" // VAD mode: no utterance starts while the robot speaks (+ tail)
	halfDuplexMute = "mute" // the mic delivers silence while the robot speaks (+ tail)
	halfDuplexOff  = "off"  // full duplex (echo cancelled elsewhere)
)

// audioDevicesConfig is the audio_devices section: the devices, which
// package portaudio configures and validates (portaudio.Config), and the
// agent's half-duplex policy.
type audioDevicesConfig struct {
	portaudio.Config `yaml:",inline"`
	// HalfDuplex is gate (default), mute or off; HalfDuplexTailMS how long
	// after the last audible output the mic stays gated (room echo).
	HalfDuplex       string `yaml:"half_duplex"`
	HalfDuplexTailMS int    `yaml:"half_duplex_tail_ms"`
}

func defaultAudioDevices() audioDevicesConfig {
	return audioDevicesConfig{Config: portaudio.DefaultConfig(), HalfDuplex: halfDuplexGate, HalfDuplexTailMS: 300}
}

// loadAudioDevices reads the audio_devices section of cfg over the defaults,
// then the ROBOT_AGENT_AUDIO_INPUT, ROBOT_AGENT_AUDIO_OUTPUT and
// ROBOT_AGENT_HALF_DUPLEX environment variables, and validates the result.
// Problems are *field.Error values under audio_devices.
func loadAudioDevices(cfg config.Config, getenv func(string) string) (audioDevicesConfig, error) {
	c := defaultAudioDevices()
	if _, err := config.DecodeSection(cfg.Extra, audioDevicesSection, &c); err != nil {
		return c, err
	}
	if v := getenv("ROBOT_AGENT_AUDIO_INPUT"); v != "" {
		c.Input = v
	}
	if v := getenv("ROBOT_AGENT_AUDIO_OUTPUT"); v != "" {
		c.Output = v
	}
	if v := getenv("ROBOT_AGENT_HALF_DUPLEX"); v != "" {
		c.HalfDuplex = v
	}
	return c, c.validate()
}

func (c audioDevicesConfig) validate() error {
	var errs field.List
	errs.Append(field.Under(audioDevicesSection, c.Config.Validate()))
	switch c.HalfDuplex {
	case halfDuplexGate, halfDuplexMute, halfDuplexOff:
	default:
		errs.Add(audioDevicesSection+".half_duplex", c.HalfDuplex, "want gate, mute or off", "")
	}
	if c.HalfDuplexTailMS < 0 || c.HalfDuplexTailMS > 5000 {
		errs.Add(audioDevicesSection+".half_duplex_tail_ms", c.HalfDuplexTailMS, "want 0..5000", "")
	}
	return errs.Err()
}
