// Package config loads and validates the agent's configuration: defaults,
// then the YAML file, then environment variables, then command-line flags
// (applied by cmd/robot-agent). Validation errors name the field and the bad
// value.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/capture"
)

// ErrInvalid wraps every validation error.
var ErrInvalid = errors.New("config: invalid")

// Config is the whole agent configuration. YAML keys are given in the tags;
// docs/configuration in README.md lists them with defaults.
type Config struct {
	Device   Device   `yaml:"device"`
	Gateway  Gateway  `yaml:"gateway"`
	Audio    Audio    `yaml:"audio"`
	Playback Playback `yaml:"playback"`
	Sim      Sim      `yaml:"sim"`
	Metrics  Metrics  `yaml:"metrics"`
	Log      Log      `yaml:"log"`
	// Extra holds sections owned by optional subsystems (state, skills,
	// identity, camera) that decode them themselves.
	Extra map[string]yaml.Node `yaml:",inline"`
}

// Device identifies the robot.
type Device struct {
	ID              string `yaml:"id"`
	Model           string `yaml:"model"`
	FirmwareVersion string `yaml:"firmware_version"`
}

// Gateway is the uplink target.
type Gateway struct {
	// URL of the gateway endpoint (wss://host/v1/robot). Empty with --sim
	// starts the embedded gateway.
	URL string `yaml:"url"`
	// TokenFile holds the bearer token. If empty, the agent looks for
	// $CREDENTIALS_DIRECTORY/gateway-token (systemd LoadCredential).
	TokenFile string `yaml:"token_file"`
	// Token is set from the file (never from YAML or flags).
	Token string `yaml:"-"`
	// Embedded gateway (sim only).
	TTSMode string  `yaml:"tts_mode"` // binary | base64
	Speed   float64 `yaml:"speed"`    // TTS streaming speed vs real time
}

// Audio configures the mic pipeline: the capture pump's settings
// (frame_ms, mode, vad.*; see package capture) plus the uplink queue.
type Audio struct {
	capture.Config `yaml:",inline"`
	// MicQueueMS is how much mic audio the uplink buffers while the link is
	// slow or down before dropping (lossless-bounded policy).
	MicQueueMS int `yaml:"mic_queue_ms"`
}

// Playback configures the jitter buffer.
type Playback struct {
	PrebufferMS int `yaml:"prebuffer_ms"`
	BufferMS    int `yaml:"buffer_ms"`
	FadeMS      int `yaml:"fade_ms"`
	PeriodMS    int `yaml:"period_ms"`
}

// Sim configures simulated devices.
type Sim struct {
	// MicWAV plays this file instead of the generated speech-like script.
	MicWAV string `yaml:"mic_wav"`
	// Utterances of the generated script: speech length and pause after it.
	SpeechMS  int `yaml:"speech_ms"`
	SilenceMS int `yaml:"silence_ms"`
	// SpeakerWAV receives everything the simulated speaker plays.
	SpeakerWAV string `yaml:"speaker_wav"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	Listen string `yaml:"listen"` // host:port (DefaultMetricsListen), or off
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "robot"
	}
	return Config{
		Device:   Device{ID: host, Model: "generic"},
		Gateway:  Gateway{TTSMode: "binary", Speed: 4},
		Audio:    Audio{Config: capture.Config{Mode: capture.ModeVAD}.WithDefaults(), MicQueueMS: 2000},
		Playback: Playback{PrebufferMS: 60, BufferMS: 10000, FadeMS: 4, PeriodMS: 10},
		Sim:      Sim{SpeechMS: 1500, SilenceMS: 4000, SpeakerWAV: "out/played.wav"},
		Metrics:  Metrics{Listen: DefaultMetricsListen},
		Log:      Log{Level: "info", Format: "text"},
	}
}

// Load reads a YAML file over the defaults. Unknown keys are errors (with
// their line number) unless they are sections listed in extraSections.
func Load(path string, extraSections ...string) (Config, error) {
	c := Default()
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	if err := Decode(f, &c, extraSections...); err != nil {
		return c, fmt.Errorf("config: %s: %w", path, err)
	}
	return c, nil
}

// Decode decodes YAML from r into c (which holds defaults).
func Decode(r io.Reader, c *Config, extraSections ...string) error {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	// Strict: a misspelt key inside a known section is an error with its
	// line; unknown top-level keys land in Extra and are checked below.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for k, n := range c.Extra {
		if !slices.Contains(extraSections, k) {
			return fmt.Errorf("%w: line %d: unknown key %q", ErrInvalid, n.Line, k)
		}
	}
	return nil
}

// ApplyEnv overrides fields from ROBOT_AGENT_* environment variables.
func (c *Config) ApplyEnv(getenv func(string) string) {
	set := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	set(&c.Device.ID, "ROBOT_AGENT_DEVICE_ID")
	set(&c.Gateway.URL, "ROBOT_AGENT_GATEWAY_URL")
	set(&c.Gateway.TokenFile, "ROBOT_AGENT_TOKEN_FILE")
	set(&c.Log.Level, "ROBOT_AGENT_LOG_LEVEL")
	set(&c.Metrics.Listen, "ROBOT_AGENT_METRICS_LISTEN")
}

// LoadToken reads the bearer token from TokenFile, or from
// $CREDENTIALS_DIRECTORY/gateway-token when TokenFile is empty. A missing
// token is an error only when required.
func (c *Config) LoadToken(getenv func(string) string, required bool) error {
	path := c.Gateway.TokenFile
	if path == "" {
		if dir := getenv("CREDENTIALS_DIRECTORY"); dir != "" {
			path = filepath.Join(dir, "gateway-token")
		}
	}
	if path == "" {
		if required {
			return fmt.Errorf("%w: gateway.token_file is empty and $CREDENTIALS_DIRECTORY/gateway-token is not set; the token is never taken from the command line", ErrInvalid)
		}
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: gateway.token_file %q: %v", ErrInvalid, path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return fmt.Errorf("%w: gateway.token_file %q is empty", ErrInvalid, path)
	}
	c.Gateway.Token = tok
	return nil
}

// Validate checks every field and returns all problems, each naming the
// field and the bad value.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, why string) {
		errs = append(errs, fmt.Errorf("%w: %s = %v: %s", ErrInvalid, field, v, why))
	}
	if c.Device.ID == "" {
		bad("device.id", `""`, "must not be empty")
	} else if strings.ContainsAny(c.Device.ID, " \t\r\n/") {
		bad("device.id", fmt.Sprintf("%q", c.Device.ID), "must not contain spaces or '/'")
	}
	if c.Gateway.URL != "" {
		u, err := url.Parse(c.Gateway.URL)
		switch {
		case err != nil || u.Host == "":
			bad("gateway.url", fmt.Sprintf("%q", c.Gateway.URL), "is not a URL with a host")
		case u.Scheme != "ws" && u.Scheme != "wss":
			bad("gateway.url", fmt.Sprintf("%q", c.Gateway.URL), "scheme must be wss (or ws for loopback)")
		case u.User != nil || u.RawQuery != "":
			bad("gateway.url", "(redacted)", "must not carry credentials or a query; use gateway.token_file")
		}
	}
	if c.Gateway.TTSMode != "binary" && c.Gateway.TTSMode != "base64" {
		bad("gateway.tts_mode", fmt.Sprintf("%q", c.Gateway.TTSMode), "must be binary or base64")
	}
	if c.Gateway.Speed <= 0 || c.Gateway.Speed > 100 {
		bad("gateway.speed", c.Gateway.Speed, "must be in (0, 100]")
	}
	if err := c.Audio.Config.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: audio: %v", ErrInvalid, err))
	}
	if c.Audio.MicQueueMS < c.Audio.FrameMS || c.Audio.MicQueueMS > 60000 {
		bad("audio.mic_queue_ms", c.Audio.MicQueueMS, "must be between one frame and 60000")
	}
	p := c.Playback
	if p.PrebufferMS < 0 || p.PrebufferMS > 2000 {
		bad("playback.prebuffer_ms", p.PrebufferMS, "must be in [0, 2000]")
	}
	if p.BufferMS < 200 || p.BufferMS > 60000 {
		bad("playback.buffer_ms", p.BufferMS, "must be in [200, 60000]")
	}
	if p.FadeMS < 0 || p.FadeMS > 50 {
		bad("playback.fade_ms", p.FadeMS, "must be in [0, 50]")
	}
	if p.PeriodMS < 2 || p.PeriodMS > 100 {
		bad("playback.period_ms", p.PeriodMS, "must be in [2, 100]")
	}
	if c.Sim.SpeechMS < 100 || c.Sim.SpeechMS > 60000 {
		bad("sim.speech_ms", c.Sim.SpeechMS, "must be in [100, 60000]")
	}
	if c.Sim.SilenceMS < 0 || c.Sim.SilenceMS > 60000 {
		bad("sim.silence_ms", c.Sim.SilenceMS, "must be in [0, 60000]")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", fmt.Sprintf("%q", c.Log.Level), "must be debug, info, warn or error")
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", fmt.Sprintf("%q", c.Log.Format), "must be text or json")
	}
	if err := c.Metrics.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
