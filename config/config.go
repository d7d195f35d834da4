// Package config loads and validates the agent's configuration: defaults,
// then the YAML file, then environment variables, then command-line flags
// (applied by cmd/robot-agent). Validation errors name the field and the bad
// value.
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/config/field"
)

// ErrInvalid wraps every validation error; each problem is a *field.Error
// ("yaml.path: value: problem (hint)").
var ErrInvalid = field.ErrInvalid

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
	Spool    Spool    `yaml:"spool"`
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
	// TLS configures wss:// connections: a private CA, a client
	// certificate (mTLS) and the server name to verify.
	TLS TLS `yaml:"tls"`
	// AllowInsecureWS permits plain ws:// to a non-loopback host (a LAN
	// development gateway). Audio and the token then cross the network in
	// clear text; the agent logs a warning at start.
	AllowInsecureWS bool `yaml:"allow_insecure_ws"`
	// Embedded gateway (sim only).
	TTSMode string  `yaml:"tts_mode"` // binary | base64
	Speed   float64 `yaml:"speed"`    // TTS streaming speed vs real time
}

// TLS configures how the agent verifies the gateway and proves itself.
type TLS struct {
	// CAFile holds PEM CA certificates trusted for the gateway instead of
	// the system roots (a private CA).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile hold the robot's PEM client certificate and key
	// for gateways that require mutual TLS. Both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name verified in the gateway's certificate when it
	// differs from the URL's host (e.g. connecting by IP address).
	ServerName string `yaml:"server_name"`
}

// IsZero reports whether no TLS option is set.
func (t TLS) IsZero() bool { return t == TLS{} }

// Audio configures the mic pipeline: the capture pump's settings
// (frame_ms, mode, vad.*) plus the uplink queue. Package config holds only
// their YAML schema: package capture owns their meaning, defaults and
// validation, and cmd/robot-agent maps this section onto capture.Config
// (and validates it there, for run and doctor alike). Zero values mean
// capture's defaults.
type Audio struct {
	Mic `yaml:",inline"`
	// MicQueueMS is how much mic audio the uplink buffers while the link is
	// slow or down before dropping (lossless-bounded policy).
	MicQueueMS int `yaml:"mic_queue_ms"`
}

// Mic is the schema of the capture pump's settings (capture.Config).
type Mic struct {
	FrameMS int    `yaml:"frame_ms"` // 10, 20, 40 or 60
	Mode    string `yaml:"mode"`     // continuous | vad
	VAD     VAD    `yaml:"vad"`
}

// VAD is the schema of the local voice activity detector's settings
// (capture.VADConfig: the same fields in the same order, so that one
// converts to the other).
type VAD struct {
	StartDB          float64 `yaml:"start_db"`
	StopDB           float64 `yaml:"stop_db"`
	MinFloorDBFS     float64 `yaml:"min_floor_dbfs"`
	FloorRiseDBPerS  float64 `yaml:"floor_rise_db_per_s"`
	PreRollMS        int     `yaml:"preroll_ms"`
	HangoverMS       int     `yaml:"hangover_ms"`
	MinSpeechMS      int     `yaml:"min_speech_ms"`
	MaxUtteranceMS   int     `yaml:"max_utterance_ms"`
	Detector         string  `yaml:"detector"`
	DetectorMode     int     `yaml:"detector_mode"`
	BackgroundDB     float64 `yaml:"background_db"`
	TransientDecayDB float64 `yaml:"transient_decay_db"`
	GradualStartMS   int     `yaml:"gradual_start_ms"`
	FastOnset        bool    `yaml:"fast_onset"`
}

// Playback configures the jitter buffer.
type Playback struct {
	PrebufferMS int `yaml:"prebuffer_ms"`
	BufferMS    int `yaml:"buffer_ms"`
	FadeMS      int `yaml:"fade_ms"`
	PeriodMS    int `yaml:"period_ms"`
	// MinDelayMS is a floor under the adaptive player's target delay (0:
	// the player's default, 20 ms); ConcealPct the share of the output it
	// aims to conceal at most, in percent (README, docs/benchmarks.md
	// "Playout over real networks").
	MinDelayMS int     `yaml:"min_delay_ms"`
	ConcealPct float64 `yaml:"conceal_pct"`
	// VolumeDB is the robot's own volume at start, -60..0 dB (0: the voice
	// as the gateway sent it); the audio.volume skill changes it while the
	// agent runs. It is applied above the echo canceller's reference, so
	// a change does not disturb the canceller (docs/audio.md).
	VolumeDB float64 `yaml:"volume_db"`
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
		Audio:    Audio{Mic: Mic{Mode: "vad"}, MicQueueMS: 2000},
		Playback: Playback{PrebufferMS: 60, BufferMS: 320000, FadeMS: 4, PeriodMS: 10, ConcealPct: 0.9},
		Sim:      Sim{SpeechMS: 1500, SilenceMS: 4000, SpeakerWAV: "out/played.wav"},
		Metrics:  Metrics{Listen: DefaultMetricsListen},
		Log:      Log{Level: "info", Format: "text"},
		Spool:    Spool{MaxMB: 64},
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
		return c, &field.Error{Path: "--config", Value: field.Format(path), Problem: "cannot open: " + unwrapPathError(err),
			Hint: "give the path of a readable YAML file (packaged installs: /etc/robot-agent/config.yaml)"}
	}
	defer f.Close()
	if err := Decode(f, &c, extraSections...); err != nil {
		return c, &FileError{Path: path, Err: err}
	}
	return c, nil
}

// FileError is a configuration file's problems; Err joins *field.Error
// values, one per problem.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	var b strings.Builder
	for i, p := range field.All(e.Err) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Path + ": " + p.Error())
	}
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

// Decode decodes YAML from r into c (which holds defaults). Every problem
// is reported at once, each a *field.Error with its YAML path and line:
// unknown keys (with a suggestion), values of the wrong kind. Unknown
// top-level keys are errors unless listed in extraSections (they land in
// c.Extra for their subsystems to decode).
func Decode(r io.Reader, c *Config, extraSections ...string) error {
	n, err := parseYAML(r)
	if err != nil || n == nil {
		return err
	}
	return DecodeNode(n, "", c, extraSections...)
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

// CredentialName is the systemd credential holding the token
// ($CREDENTIALS_DIRECTORY/gateway-token, LoadCredential= in the unit).
const CredentialName = "gateway-token"

// TokenPath says where the token comes from: gateway.token_file when set
// (explicit: the file must exist and hold a token), else
// $CREDENTIALS_DIRECTORY/gateway-token when that directory is set (not
// explicit: a missing file means no token). "" when neither is set: the
// agent connects without a token. run (LoadToken) and doctor both decide
// with it.
func (c *Config) TokenPath(getenv func(string) string) (path string, explicit bool) {
	if c.Gateway.TokenFile != "" {
		return c.Gateway.TokenFile, true
	}
	if dir := getenv("CREDENTIALS_DIRECTORY"); dir != "" {
		return filepath.Join(dir, CredentialName), false
	}
	return "", false
}

// LoadToken reads the bearer token from the file TokenPath names. Without
// one the agent connects without a token (gateways that do not ask for
// one), unless required; an empty credential file (the package installs
// one as a placeholder) also means no token. A token_file that is set but
// unreadable or empty is always an error.
func (c *Config) LoadToken(getenv func(string) string, required bool) error {
	path, explicit := c.TokenPath(getenv)
	if path == "" {
		if required {
			return &field.Error{Path: "gateway.token_file", Problem: "not set and $CREDENTIALS_DIRECTORY/gateway-token is not set",
				Hint: "put the token in a file and set gateway.token_file; the token is never taken from the command line"}
		}
		return nil
	}
	b, err := os.ReadFile(path)
	tok := strings.TrimSpace(string(b))
	if !explicit && !required && (os.IsNotExist(err) || (err == nil && tok == "")) {
		// No credential passed, or the package's empty placeholder (the
		// unit's LoadCredential= needs a file to exist): connect without a
		// token.
		return nil
	}
	if err != nil {
		return &field.Error{Path: "gateway.token_file", Value: field.Format(path), Problem: "cannot read: " + unwrapPathError(err),
			Hint: "check the path and that the service user may read it"}
	}
	if tok == "" {
		return &field.Error{Path: "gateway.token_file", Value: field.Format(path), Problem: "the file is empty", Hint: "write the gateway token into it"}
	}
	c.Gateway.Token = tok
	return nil
}

// unwrapPathError drops the path an *os.PathError repeats.
func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// IsLoopback reports whether host (a URL's Hostname) is this machine:
// localhost or a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate checks every field config owns and returns all problems, each a
// *field.Error naming the YAML path and the bad value. The sections whose
// meaning belongs to a pipeline stage or a driver (audio, and the sections
// in Extra) are validated by their owners where cmd/robot-agent maps them.
func (c *Config) Validate() error {
	var errs field.List
	bad := errs.Add
	if c.Device.ID == "" {
		bad("device.id", "", "must not be empty", "set it or leave it out for the hostname")
	} else if strings.ContainsAny(c.Device.ID, " \t\r\n/") {
		bad("device.id", c.Device.ID, "must not contain spaces or '/'", "")
	}
	g := c.Gateway
	if g.URL != "" {
		u, err := url.Parse(g.URL)
		switch {
		case err != nil || u.Host == "":
			bad("gateway.url", g.URL, "not a URL with a host", "e.g. wss://gateway.example.com/v1/robot")
		case u.User != nil || u.RawQuery != "":
			errs = append(errs, &field.Error{Path: "gateway.url", Value: "(redacted)", Problem: "must not carry credentials or a query", Hint: "put the token in gateway.token_file"})
		case u.Scheme != "ws" && u.Scheme != "wss":
			bad("gateway.url", g.URL, "scheme must be wss", "or ws to a loopback host")
		case u.Scheme == "ws" && !IsLoopback(u.Hostname()) && !g.AllowInsecureWS:
			bad("gateway.url", g.URL, "plain ws:// to a non-loopback host sends audio and the token in clear text",
				"use wss://, or set gateway.allow_insecure_ws: true for a LAN development gateway")
		case u.Scheme == "ws" && !g.TLS.IsZero():
			bad("gateway.tls", nil, "set but gateway.url is plain ws://", "use a wss:// URL or remove gateway.tls")
		}
	}
	if (g.TLS.CertFile == "") != (g.TLS.KeyFile == "") {
		bad("gateway.tls.cert_file", g.TLS.CertFile, "cert_file and key_file go together", "set both for mutual TLS, or neither")
	}
	if g.TTSMode != "binary" && g.TTSMode != "base64" {
		bad("gateway.tts_mode", g.TTSMode, "want binary or base64", "")
	}
	if g.Speed <= 0 || g.Speed > 100 {
		bad("gateway.speed", g.Speed, "want a number in (0, 100]", "")
	}
	// audio: validated with capture's rules where it is mapped
	// (cmd/robot-agent), as the other pipeline and driver sections are.
	p := c.Playback
	rng := func(path string, v, lo, hi int) {
		if v < lo || v > hi {
			bad(path, v, fmt.Sprintf("want %d..%d", lo, hi), "")
		}
	}
	rng("playback.prebuffer_ms", p.PrebufferMS, 0, 2000)
	rng("playback.buffer_ms", p.BufferMS, 200, 600000)
	rng("playback.fade_ms", p.FadeMS, 0, 50)
	rng("playback.period_ms", p.PeriodMS, 2, 100)
	rng("playback.min_delay_ms", p.MinDelayMS, 0, 2000)
	if !(p.ConcealPct >= 0.01 && p.ConcealPct <= 10) { // NaN fails too
		bad("playback.conceal_pct", p.ConcealPct, "want 0.01..10 (percent of the output)", "")
	}
	if !(p.VolumeDB >= -60 && p.VolumeDB <= 0) {
		hint := ""
		if p.VolumeDB > 0 {
			hint = "for a louder robot turn its amplifier up"
		}
		bad("playback.volume_db", p.VolumeDB, "want -60..0 (dB; 0 = the voice as sent)", hint)
	}
	rng("sim.speech_ms", c.Sim.SpeechMS, 100, 60000)
	rng("sim.silence_ms", c.Sim.SilenceMS, 0, 60000)
	if err := c.Metrics.validate(); err != nil { // metrics.go
		errs = append(errs, err)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", c.Log.Level, "want debug, info, warn or error", "")
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", c.Log.Format, "want text or json", "")
	}
	c.Spool.validate(&errs)
	return errs.Err()
}
