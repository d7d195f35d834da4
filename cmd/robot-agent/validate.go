package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/identity"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
)

// validateConfig is the one validation `run` and `doctor` share: the core
// configuration, every optional section (audio_devices, camera, state,
// skills, identity), the TLS files and, with sim, the mic WAV. It returns
// every problem at once, each a *field.Error (or a section's own error
// wrapping config.ErrInvalid).
func validateConfig(cfg config.Config, sim bool, getenv func(string) string) error {
	var errs field.List
	errs.Append(cfg.Validate())
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
	sections := []struct {
		name string
		dst  interface{ Validate() error }
	}{
		{"state", &state.Config{}},
		{"skills", &skills.Config{}},
		{"identity", &identity.Config{}},
	}
	for _, s := range sections {
		ok, err := config.DecodeSection(cfg.Extra, s.name, s.dst)
		switch {
		case err != nil:
			errs.Append(err)
		case ok:
			if err := validateSection(s.dst); err != nil {
				errs = append(errs, sectionError(s.name, err))
			}
		}
	}
	if sim && cfg.Sim.MicWAV != "" {
		if err := checkWAV(cfg.Sim.MicWAV); err != nil {
			errs = append(errs, &field.Error{Path: "sim.mic_wav", Value: field.Format(cfg.Sim.MicWAV), Problem: err.Error(),
				Hint: "give a readable 16-bit PCM WAV file (--mic-wav), or leave it empty for the generated speech script"})
		}
	}
	return errs.Err()
}

// validateSection validates a decoded section with its defaults applied,
// as the subsystem will see it.
func validateSection(dst any) error {
	switch c := dst.(type) {
	case *state.Config:
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

// sectionMessage is how state, skills and identity phrase a problem:
// "skills: allow[0] is \"x\", want one of ...".
var sectionMessage = regexp.MustCompile(`^([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)*) is (.+?), (want .+)$`)

// sectionError turns a section's own validation error into the
// "yaml.path: value: problem" form where its message allows.
func sectionError(section string, err error) *field.Error {
	msg := strings.TrimPrefix(err.Error(), section+": ")
	if m := sectionMessage.FindStringSubmatch(msg); m != nil {
		return &field.Error{Path: field.Join(section, m[1]), Value: m[2], Problem: m[3]}
	}
	return &field.Error{Path: section, Problem: msg}
}
