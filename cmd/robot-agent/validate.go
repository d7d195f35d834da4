package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/identity"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state/modules"
)

// validateConfig is the one validation `run` and `doctor` share: the core
// configuration, the audio section (capture's rules), every optional
// section (audio_devices, camera, state, skills, identity, duplex,
// audio_codec, support), the TLS files and, with sim, the mic WAV and the
// simulated room's WAVs. It
// returns every problem at once, each a *field.Error.
func validateConfig(cfg config.Config, sim bool, getenv func(string) string) error {
	var errs field.List
	errs.Append(cfg.Validate())
	errs.Append(validateAudio(cfg.Audio)) // capture_config.go
	if cfg.Gateway.URL == "" && !sim {
		errs.Add("gateway.url", nil, "not set", "set gateway.url (or ROBOT_AGENT_GATEWAY_URL / --gateway-url) to the wss:// gateway, or use --sim for the embedded gateway")
	}
	if _, err := cfg.Gateway.TLSConfig(); err != nil {
		errs.Append(err)
	}
	if _, err := loadAudioDevices(cfg, getenv); err != nil {
		errs.Append(err)
	}
	if cc, err := loadCameraConfig(cfg); err != nil {
		errs.Append(err)
	} else {
		errs.Append(cc.checkBuild())
	}
	// The sections of the optional subsystems. Each validates itself
	// (with its defaults applied, as the subsystem will see it) and
	// names every problem by its full YAML path.
	sections := []struct {
		name string
		dst  any
	}{
		{modules.Section, &modules.Config{}},
		{skills.Section, &skills.Config{}},
		{identity.Section, &identity.Config{}},
	}
	for _, s := range sections {
		ok, err := config.DecodeSection(cfg.Extra, s.name, s.dst)
		switch {
		case err != nil:
			errs.Append(err)
		case ok:
			errs.Append(validateSection(s.dst))
		}
	}
	if d, err := loadDuplex(cfg, getenv); err != nil {
		errs.Append(err)
	} else if sim && d.SimEcho != "none" {
		// The simulated room once, as run builds it: its WAV files
		// (sim_room.ir_wav, noise_wav) are read here.
		if _, err := room.New(d.SimRoom); err != nil {
			errs = append(errs, roomError(duplexSection+".sim_room", err))
		}
	}
	if _, err := loadAudioCodec(cfg); err != nil {
		errs.Append(err)
	}
	if _, err := loadSupportConfig(cfg, getenv); err != nil {
		errs.Append(err)
	}
	if sim && cfg.Sim.MicWAV != "" {
		if err := checkWAV(cfg.Sim.MicWAV); err != nil {
			errs = append(errs, &field.Error{Path: "sim.mic_wav", Value: field.Format(cfg.Sim.MicWAV), Problem: err.Error(),
				Hint: "give a readable WAV file (--mic-wav), or leave it empty for the generated speech script"})
		}
	}
	return errs.Err()
}

// validateSection validates a decoded section with its defaults applied,
// as the subsystem will see it.
func validateSection(dst any) error {
	switch c := dst.(type) {
	case *modules.Config:
		return c.Defaults().Validate()
	case *skills.Config:
		return c.Defaults().Validate()
	case *identity.Config:
		return c.Defaults().Validate()
	}
	return nil
}

// checkWAV opens path as a WAV file and reads its header.
func checkWAV(path string) error {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("cannot open: %w", pe.Err)
		}
		return err
	}
	defer f.Close()
	_, err = wav.NewReader(f)
	return err
}
