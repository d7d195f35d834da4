package main

import (
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
)

// The audio section: package config holds its YAML schema, package
// capture the meaning, defaults and validation of the pump's settings.
// This is where one becomes the other.

// captureConfig maps the audio section onto the capture pump's options,
// with capture's defaults for what it leaves unset.
func captureConfig(a config.Audio) capture.Config {
	return capture.Config{FrameMS: a.FrameMS, Mode: a.Mode, VAD: capture.VADConfig(a.VAD)}.WithDefaults()
}

// withAudioDefaults returns cfg with capture's defaults in the audio
// section's unset fields, so that the agent (and the support bundle's copy
// of the configuration) sees the values in effect.
func withAudioDefaults(cfg config.Config) config.Config {
	c := captureConfig(cfg.Audio)
	cfg.Audio.Mic = config.Mic{FrameMS: c.FrameMS, Mode: c.Mode, VAD: config.VAD(c.VAD)}
	return cfg
}

// validateAudio checks the audio section with capture's rules, and the
// uplink queue against the frame length. Problems are *field.Error values
// under audio.
func validateAudio(a config.Audio) error {
	var errs field.List
	c := captureConfig(a)
	errs.Append(field.Under("audio", c.Validate()))
	if a.MicQueueMS < c.FrameMS || a.MicQueueMS > 60000 {
		errs.Add("audio.mic_queue_ms", a.MicQueueMS, "want between one frame and 60000", "")
	}
	return errs.Err()
}
