package portaudio

import (
	"time"

	"github.com/robot-agent/robot-agent/config/field"
)

// Config is the agent's choice of audio devices as a configuration file
// gives it (robot-agent's audio_devices section): the input and output
// device, their formats and timing, and the host's retry bound. The
// driver owns these options and their validation; Host, Sink and Source
// take the DeviceConfig, SinkConfig and HostConfig it maps to. The zero
// value is not valid: start from DefaultConfig.
type Config struct {
	// Input and Output select devices by name or a unique part of it, as
	// `robot-agent devices` prints them (see Match); empty: the system
	// default.
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
	// RetryMaxMS caps the backoff between attempts to reopen a missing
	// device.
	RetryMaxMS int `yaml:"retry_max_ms"`
	// RealtimePriority is the SCHED_FIFO priority of the device callback
	// threads (0: normal scheduling). Without the privilege the driver
	// logs one warning and keeps normal priority.
	RealtimePriority int `yaml:"realtime_priority"`
}

// DefaultConfig is the system default devices with the driver's default
// timing.
func DefaultConfig() Config {
	return Config{
		PeriodMS:         defaultPeriod,
		OutputBufferMS:   DefaultSinkBufferMS,
		RetryMaxMS:       int(DefaultRetryMax / time.Millisecond),
		RealtimePriority: DefaultRealtimePriority,
	}
}

// Validate returns every problem of c, each a *field.Error named by its
// YAML key (place them under the section with field.Under).
func (c Config) Validate() error {
	var errs field.List
	for _, r := range []struct {
		name string
		v    int
	}{{"input_rate", c.InputRate}, {"output_rate", c.OutputRate}} {
		if r.v != 0 && (r.v < minDeviceRate || r.v > maxDeviceRate) {
			errs.Add(r.name, r.v, "want 0 (device default) or 8000..384000", "")
		}
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"input_channels", c.InputChannels}, {"output_channels", c.OutputChannels}} {
		if r.v < 0 || r.v > 8 {
			errs.Add(r.name, r.v, "want 0 (automatic) or 1..8", "")
		}
	}
	if c.PeriodMS < 1 || c.PeriodMS > maxPeriodMS {
		errs.Add("period_ms", c.PeriodMS, "want 1..100", "")
	}
	if c.LatencyMS < 0 || c.LatencyMS > 1000 {
		errs.Add("latency_ms", c.LatencyMS, "want 0 (device default) or up to 1000", "")
	}
	if c.OutputBufferMS < 5 || c.OutputBufferMS > maxBufferMS {
		errs.Add("output_buffer_ms", c.OutputBufferMS, "want 5..2000", "")
	}
	if c.RetryMaxMS < 250 || c.RetryMaxMS > 60000 {
		errs.Add("retry_max_ms", c.RetryMaxMS, "want 250..60000", "")
	}
	if c.RealtimePriority < 0 || c.RealtimePriority > 99 {
		errs.Add("realtime_priority", c.RealtimePriority, "want 0 (normal scheduling) or 1..99 (SCHED_FIFO)", "")
	}
	return errs.Err()
}

// Device is the DeviceConfig of the output (output true) or input device.
func (c Config) Device(output bool) DeviceConfig {
	d := DeviceConfig{Device: c.Input, SampleRate: c.InputRate, Channels: c.InputChannels}
	if output {
		d = DeviceConfig{Device: c.Output, SampleRate: c.OutputRate, Channels: c.OutputChannels}
	}
	d.PeriodMS = c.PeriodMS
	d.Latency = time.Duration(c.LatencyMS) * time.Millisecond
	d.RealtimePriority = c.RealtimePriority
	if d.RealtimePriority == 0 {
		d.RealtimePriority = -1 // DeviceConfig: 0 is the default, -1 off
	}
	return d
}

// Sink is the SinkConfig of the output device, with the callback's fades
// of fadeMS.
func (c Config) Sink(fadeMS int) SinkConfig {
	return SinkConfig{DeviceConfig: c.Device(true), BufferMS: c.OutputBufferMS, FadeMS: fadeMS}
}

// Source is the SourceConfig of the input device.
func (c Config) Source() SourceConfig { return SourceConfig{DeviceConfig: c.Device(false)} }

// RetryMax is HostConfig.RetryMax.
func (c Config) RetryMax() time.Duration { return time.Duration(c.RetryMaxMS) * time.Millisecond }
