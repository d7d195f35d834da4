package main

import (
	"time"

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

// audioDevicesConfig is the audio_devices section.
type audioDevicesConfig struct {
	// Input and Output select devices by name or a unique part of it, as
	// `robot-agent devices` prints them; empty: the system default.
	Input  string `yaml:"input"`
	Output string `yaml:"output"`
	// Device-side formats; 0: the device's default rate, min(channels, 2).
	InputRate      int `yaml:"input_rate"`
	OutputRate     int `yaml:"output_rate"`
	InputChannels  int `yaml:"input_channels"`
	OutputChannels int `yaml:"output_channels"`
	// PeriodMS is the device callback period; LatencyMS the device buffer
	// suggested to PortAudio (0: the device's low latency, >= 3 periods).
	PeriodMS  int `yaml:"period_ms"`
	LatencyMS int `yaml:"latency_ms"`
	// OutputBufferMS is queued between the player and the device callback
	// to ride out Go scheduling delays (interrupts flush it).
	OutputBufferMS int `yaml:"output_buffer_ms"`
	// HalfDuplex is gate (default), mute or off; HalfDuplexTailMS how long
	// after the last audible output the mic stays gated (room echo).
	HalfDuplex       string `yaml:"half_duplex"`
	HalfDuplexTailMS int    `yaml:"half_duplex_tail_ms"`
	// RetryMaxMS caps the backoff between attempts to reopen a missing
	// device.
	RetryMaxMS int `yaml:"retry_max_ms"`
	// RealtimePriority is the SCHED_FIFO priority of the device callback
	// threads (0: normal scheduling). Without the privilege the agent logs
	// one warning and keeps normal priority.
	RealtimePriority int `yaml:"realtime_priority"`
}

// devicePriority maps realtime_priority to portaudio.DeviceConfig's
// RealtimePriority (where 0 means the default and -1 off).
func (c audioDevicesConfig) devicePriority() int {
	if c.RealtimePriority == 0 {
		return -1
	}
	return c.RealtimePriority
}

func defaultAudioDevices() audioDevicesConfig {
	return audioDevicesConfig{
		PeriodMS:         10,
		OutputBufferMS:   portaudio.DefaultSinkBufferMS,
		HalfDuplex:       halfDuplexGate,
		HalfDuplexTailMS: 300,
		RetryMaxMS:       int(portaudio.DefaultRetryMax / time.Millisecond),
		RealtimePriority: portaudio.DefaultRealtimePriority,
	}
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
	bad := func(name string, v any, want string) {
		errs.Add(audioDevicesSection+"."+name, v, want, "")
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"input_rate", c.InputRate}, {"output_rate", c.OutputRate}} {
		if r.v != 0 && (r.v < 8000 || r.v > 384000) {
			bad(r.name, r.v, "want 0 (device default) or 8000..384000")
		}
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"input_channels", c.InputChannels}, {"output_channels", c.OutputChannels}} {
		if r.v < 0 || r.v > 8 {
			bad(r.name, r.v, "want 0 (automatic) or 1..8")
		}
	}
	if c.PeriodMS < 1 || c.PeriodMS > 100 {
		bad("period_ms", c.PeriodMS, "want 1..100")
	}
	if c.LatencyMS < 0 || c.LatencyMS > 1000 {
		bad("latency_ms", c.LatencyMS, "want 0 (device default) or up to 1000")
	}
	if c.OutputBufferMS < 5 || c.OutputBufferMS > 2000 {
		bad("output_buffer_ms", c.OutputBufferMS, "want 5..2000")
	}
	switch c.HalfDuplex {
	case halfDuplexGate, halfDuplexMute, halfDuplexOff:
	default:
		bad("half_duplex", c.HalfDuplex, "want gate, mute or off")
	}
	if c.HalfDuplexTailMS < 0 || c.HalfDuplexTailMS > 5000 {
		bad("half_duplex_tail_ms", c.HalfDuplexTailMS, "want 0..5000")
	}
	if c.RetryMaxMS < 250 || c.RetryMaxMS > 60000 {
		bad("retry_max_ms", c.RetryMaxMS, "want 250..60000")
	}
	if c.RealtimePriority < 0 || c.RealtimePriority > 99 {
		bad("realtime_priority", c.RealtimePriority, "want 0 (normal scheduling) or 1..99 (SCHED_FIFO)")
	}
	return errs.Err()
}
