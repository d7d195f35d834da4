package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/room"
)

// Full duplex: the `duplex` config section, the echo canceller wiring and
// the simulated echo path (docs/audio.md, "Full duplex").
//
//	duplex:
//	  aec: auto               # auto | webrtc | speex | none
//	  suppression: moderate   # webrtc residual echo suppression: low | moderate | high
//	  noise_suppression: false
//	  double_talk_db: 12      # onset guard: reads with more echo removed hold no user speech
//	  guard_margin_db: 0      # > 0: ... or more than the canceller's typical reduction minus this (one-clock sound cards)
//	  webrtc_delay: agnostic  # agnostic (WebRTC's delay-agnostic mode on top of the estimator) | estimator
//	  max_delay_ms: 400       # delay estimator search range beyond device latencies
//	  sim_echo: moderate      # --sim only: echo path between the simulated speaker and mic (moderate | none)
//	  sim_room: {}            # --sim only: room.Config fields overriding the moderate room
const duplexSection = "duplex"

const aecAuto = "auto"

type duplexConfig struct {
	AEC              string      `yaml:"aec"`
	Suppression      string      `yaml:"suppression"`
	NoiseSuppression bool        `yaml:"noise_suppression"`
	DoubleTalkDB     float64     `yaml:"double_talk_db"`
	GuardMarginDB    float64     `yaml:"guard_margin_db"`
	WebRTCDelay      string      `yaml:"webrtc_delay"`
	MaxDelayMS       int         `yaml:"max_delay_ms"`
	SimEcho          string      `yaml:"sim_echo"`
	SimRoom          room.Config `yaml:"sim_room"`
}

func defaultDuplex() duplexConfig {
	return duplexConfig{AEC: aecAuto, Suppression: aec.DefaultSuppression, DoubleTalkDB: aec.DefaultDoubleTalkDB,
		GuardMarginDB: aec.DefaultGuardMarginDB, WebRTCDelay: aec.DefaultDelay,
		MaxDelayMS: 400, SimEcho: "moderate", SimRoom: room.Moderate()}
}

// loadDuplex reads the duplex section over the defaults and
// ROBOT_AGENT_AEC, and validates it. Every problem is reported, each a
// *field.Error under duplex.
func loadDuplex(cfg config.Config, getenv func(string) string) (duplexConfig, error) {
	c := defaultDuplex()
	if _, err := config.DecodeSection(cfg.Extra, duplexSection, &c); err != nil {
		return c, err
	}
	if v := getenv("ROBOT_AGENT_AEC"); v != "" {
		c.AEC = v
	}
	return c, c.validate()
}

func (c duplexConfig) validate() error {
	var errs field.List
	const p = duplexSection + "."
	if c.AEC != aecAuto && !slices.Contains(aec.Kinds, c.AEC) {
		errs.Add(p+"aec", c.AEC, "want auto, "+strings.Join(aec.Kinds, ", "), "set by duplex.aec or $ROBOT_AGENT_AEC")
	}
	if err := (aec.Options{Kind: aec.KindNone, Suppression: c.Suppression}).Validate(); err != nil {
		errs.Add(p+"suppression", c.Suppression, "want low, moderate or high", "")
	}
	if c.WebRTCDelay != aec.DelayModeEstimator && c.WebRTCDelay != aec.DelayModeAgnostic {
		errs.Add(p+"webrtc_delay", c.WebRTCDelay, "want "+aec.DelayModeAgnostic+" or "+aec.DelayModeEstimator, "")
	}
	if c.GuardMarginDB < 0 || c.GuardMarginDB > 60 {
		errs.Add(p+"guard_margin_db", c.GuardMarginDB, "want 0..60", "0: the fixed double_talk_db")
	}
	if c.DoubleTalkDB < 0 || c.DoubleTalkDB > 60 {
		errs.Add(p+"double_talk_db", c.DoubleTalkDB, "want 0..60", "")
	}
	if c.MaxDelayMS < 20 || c.MaxDelayMS > 1000 {
		errs.Add(p+"max_delay_ms", c.MaxDelayMS, "want 20..1000", "")
	}
	if c.SimEcho != "moderate" && c.SimEcho != "none" {
		errs.Add(p+"sim_echo", c.SimEcho, "want moderate or none", "")
	}
	for _, e := range field.All(c.SimRoom.Validate()) {
		errs = append(errs, roomError(p+"sim_room", e))
	}
	return errs.Err()
}

// roomProblem is how package room words a problem: "delay_ms 2000 out of
// range 0..1000".
var roomProblem = regexp.MustCompile(`^([a-z0-9_]+) (.+)$`)

// roomError names a problem of room.Config.Validate by its YAML path
// below prefix (duplex.sim_room).
func roomError(prefix string, err error) *field.Error {
	msg := strings.TrimPrefix(err.Error(), room.ErrConfig.Error()+": ")
	if m := roomProblem.FindStringSubmatch(msg); m != nil {
		return &field.Error{Path: field.Join(prefix, m[1]), Problem: m[2]}
	}
	return &field.Error{Path: prefix, Problem: msg}
}

// aecKind resolves auto to the best canceller built into this binary.
func (c duplexConfig) aecKind() string {
	if c.AEC == aecAuto {
		return aec.Best()
	}
	return c.AEC
}

// duplexMode describes what this binary does about echo, for version and
// doctor.
func duplexMode() string {
	if k := aec.Best(); k != aec.KindNone {
		return "full duplex (echo canceller " + k + "; available: " + strings.Join(aec.Available()[1:], ",") + ")"
	}
	return "half duplex (no echo canceller built in: the mic is gated while the robot speaks; build with -tags webrtcapm or speexdsp for full duplex)"
}

// duplexShort is duplexMode for the one-line version string.
func duplexShort() string {
	if k := aec.Best(); k != aec.KindNone {
		return "full-duplex (echo canceller " + k + ")"
	}
	return "half-duplex (no echo canceller built in)"
}

// simRoom returns the echo path for the simulated devices (nil: none).
func simRoom(cfg config.Config) (*room.Path, error) {
	d, err := loadDuplex(cfg, os.Getenv)
	if err != nil {
		return nil, err
	}
	if d.SimEcho == "none" {
		return nil, nil
	}
	return room.New(d.SimRoom)
}

// setupEchoCanceller puts the echo canceller between the devices and the
// agent when one is configured and built in: the speaker is wrapped by a
// reference tap and the mic by the cancelling source. It returns nil (and
// changes nothing) when the canceller is off; the half-duplex gate then
// stays in force.
func (a *agent) setupEchoCanceller() (*aec.Source, error) {
	d, err := loadDuplex(a.cfg, os.Getenv)
	if err != nil {
		return nil, err
	}
	kind := d.aecKind()
	if kind == aec.KindNone {
		a.log.Info("duplex: no echo canceller; half-duplex gate while the robot speaks", "mode", duplexMode())
		return nil, nil
	}
	if f := a.speaker.Format(); f.Channels != 1 {
		return nil, fmt.Errorf("duplex: echo canceller needs a mono speaker stream, have %v", f)
	}
	c, err := aec.New(aec.Options{Kind: kind, Suppression: d.Suppression, NoiseSuppression: d.NoiseSuppression, Delay: d.WebRTCDelay})
	if err != nil {
		return nil, fmt.Errorf("duplex.aec %q: %w", kind, err)
	}
	ref, err := aec.NewReference(a.clk, a.speaker.Format().SampleRate)
	if err != nil {
		c.Close()
		return nil, err
	}
	a.closers = append(a.closers, c.Close)
	a.speaker = aec.NewTap(a.speaker, ref, a.clk)
	src := aec.NewSource(a.mic, ref, c, a.clk, aec.SourceConfig{MaxDelayMS: d.MaxDelayMS, DoubleTalkDB: d.DoubleTalkDB, GuardMarginDB: d.GuardMarginDB})
	a.mic = src
	a.log.Info("duplex: echo canceller on, full duplex (barge-in by voice while the robot speaks)", "aec", kind,
		"suppression", d.Suppression, "noise_suppression", d.NoiseSuppression)
	return src, nil
}

// simSpeechTap makes a simulated speaker a tappedSink in gate mode, so a
// build without an echo canceller keeps the half-duplex gate against the
// simulated echo path.
type simTapped struct {
	hw.AudioSink
	tap *speechTap
}

func (s *simTapped) Write(p []int16) error {
	s.tap.observe(p)
	return s.AudioSink.Write(p)
}
func (s *simTapped) Unwrap() hw.AudioSink   { return s.AudioSink }
func (s *simTapped) speechTap() *speechTap  { return s.tap }
func (s *simTapped) halfDuplexMode() string { return halfDuplexGate }

func newSimTapped(a *agent, spk hw.AudioSink) *simTapped {
	return &simTapped{AudioSink: spk, tap: newSpeechTap(a.clk, nil, spk.Format().SampleRate, 300*time.Millisecond)}
}
