package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clipguard"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/duck"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/uplink"
	"github.com/robot-agent/robot-agent/warmup"
)

// Full duplex: the `duplex` config section, the echo canceller wiring and
// the simulated echo path (docs/audio.md, "Full duplex").
//
//	duplex:
//	  aec: auto               # auto | webrtc | speex | none
//	  suppression: moderate   # webrtc residual echo suppression: low | moderate | high
//	  noise_suppression: false
//	  double_talk_db: 12      # onset guard: reads with more echo removed hold no user speech
//	  guard_margin_db: 10     # > 0: ... or more than the canceller's typical reduction minus this; 0: the fixed double_talk_db
//	  noise_guard_db: 6       # reads less than this above the output's noise floor count as echo while the robot speaks (0: off)
//	  linear_guard_db: 10     # with a linear-gated uplink: a read whose linear-filter reduction falls this far below its median is the user (0: off)
//	  reverb_guard: true      # a read holding no more than the room's late reverberation (learnt from the mic) starts no utterance while the robot speaks
//	  drift_compensation: true # estimate the speaker/mic clock offset from the echo, resample the far end to the mic's clock
//	  uplink: auto            # what goes up: canceller | linear | linear-gated (a speex linear filter beside the canceller; auto: the measured default)
//	  webrtc_delay: agnostic  # agnostic (WebRTC's delay-agnostic mode on top of the estimator) | estimator
//	  max_delay_ms: 400       # delay estimator search range beyond device latencies
//	  room_file: ""           # keep the room the reverberation guard learnt across restarts in this file (absolute path; "": learn it again at every start)
//	  startup_sound: ""       # played once at start so the canceller learns the room before the first reply, the mic held meanwhile: noise (4 s of pink noise) | an absolute path to a WAV | "" (none)
//	  tail_ms: 0              # echo tail speex's filter models, 0..1000 (0: 256 for the linear filter beside webrtc, 128 for the speex canceller); cover the room's reverberation
//	  duck:                   # local ducking (full duplex only; docs/audio.md)
//	    enabled: true
//	    depth_db: 12          # how far the robot's voice is lowered when the user talks over it
//	    hold_ms: 1500         # restored after this unless the gateway interrupts
//	    attack_ms: 10
//	    release_ms: 200
//	  clip_guard:             # the robot's echo clips the mic: lower its voice in 3 dB steps (full duplex only; docs/audio.md)
//	    enabled: true
//	    max_db: 12            # at most this far
//	    recover_min: 10       # a step back up after this many minutes of playback without a clipped echo (0: never)
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
	NoiseGuardDB     float64     `yaml:"noise_guard_db"`
	LinearGuardDB    float64     `yaml:"linear_guard_db"`
	ReverbGuard      bool        `yaml:"reverb_guard"`
	SilentSpeaker    bool        `yaml:"silent_speaker"`
	DriftComp        bool        `yaml:"drift_compensation"`
	Uplink           string      `yaml:"uplink"`
	WebRTCDelay      string      `yaml:"webrtc_delay"`
	MaxDelayMS       int         `yaml:"max_delay_ms"`
	TailMS           int         `yaml:"tail_ms"`
	RoomFile         string      `yaml:"room_file"`
	StartupSound     string      `yaml:"startup_sound"`
	Duck             duckConfig  `yaml:"duck"`
	ClipGuard        clipConfig  `yaml:"clip_guard"`
	SimEcho          string      `yaml:"sim_echo"`
	SimRoom          room.Config `yaml:"sim_room"`
}

// duckConfig is duplex.duck: local ducking of the robot's voice when the
// user starts talking over it (package duck).
type duckConfig struct {
	Enabled   bool    `yaml:"enabled"`
	DepthDB   float64 `yaml:"depth_db"`
	HoldMS    int     `yaml:"hold_ms"`
	AttackMS  int     `yaml:"attack_ms"`
	ReleaseMS int     `yaml:"release_ms"`
}

// clipConfig is duplex.clip_guard: the robot's voice is lowered while its
// echo clips the mic (package clipguard).
type clipConfig struct {
	Enabled    bool    `yaml:"enabled"`
	MaxDB      float64 `yaml:"max_db"`
	RecoverMin int     `yaml:"recover_min"`
}

func (c clipConfig) config() clipguard.Config {
	cfg := clipguard.Config{MaxDB: c.MaxDB, Recover: time.Duration(c.RecoverMin) * time.Minute}
	if c.RecoverMin == 0 {
		cfg.Recover = -1
	}
	return cfg
}

// defaultClipGuardEnabled is the measured default (docs/benchmarks.md, "A
// speaker that clips the mic").
const defaultClipGuardEnabled = true

// defaultDuckEnabled is the measured default (docs/benchmarks.md, "Local
// ducking").
const defaultDuckEnabled = true

func (c duckConfig) config() duck.Config {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return duck.Config{DepthDB: c.DepthDB, Hold: ms(c.HoldMS), Attack: ms(c.AttackMS), Release: ms(c.ReleaseMS)}
}

func defaultDuplex() duplexConfig {
	return duplexConfig{AEC: aecAuto, Suppression: aec.DefaultSuppression, DoubleTalkDB: aec.DefaultDoubleTalkDB,
		GuardMarginDB: aec.DefaultGuardMarginDB, NoiseGuardDB: aec.DefaultNoiseGuardDB, LinearGuardDB: aec.DefaultLinearGuardDB, ReverbGuard: aec.DefaultReverbGuard, SilentSpeaker: aec.DefaultSilentSpeaker, DriftComp: aec.DefaultDriftCompensation, WebRTCDelay: aec.DefaultDelay,
		Uplink:     aecAuto,
		MaxDelayMS: 400, SimEcho: "moderate", SimRoom: room.Moderate(),
		Duck: duckConfig{Enabled: defaultDuckEnabled, DepthDB: duck.DefaultDepthDB, HoldMS: int(duck.DefaultHold / time.Millisecond),
			AttackMS: int(duck.DefaultAttack / time.Millisecond), ReleaseMS: int(duck.DefaultRelease / time.Millisecond)},
		ClipGuard: clipConfig{Enabled: defaultClipGuardEnabled, MaxDB: clipguard.DefaultMaxDB, RecoverMin: int(clipguard.DefaultRecover / time.Minute)}}
}

// loadDuplex reads the duplex section over the defaults and
// ROBOT_AGENT_AEC, and validates it. Problems are *field.Error values
// under duplex, all at once.
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
	if c.NoiseGuardDB < 0 || c.NoiseGuardDB > 40 {
		errs.Add(p+"noise_guard_db", c.NoiseGuardDB, "want 0..40", "0: off")
	}
	if c.LinearGuardDB < 0 || c.LinearGuardDB > 40 {
		errs.Add(p+"linear_guard_db", c.LinearGuardDB, "want 0..40", "0: off")
	}
	if c.Uplink != aecAuto {
		if err := (aec.Options{Kind: aec.KindWebRTC, Uplink: c.Uplink}).Validate(); err != nil {
			errs.Add(p+"uplink", c.Uplink, "want auto, "+aec.UplinkCanceller+", "+aec.UplinkLinear+" or "+aec.UplinkLinearGated, "")
		}
	}
	if c.DoubleTalkDB < 0 || c.DoubleTalkDB > 60 {
		errs.Add(p+"double_talk_db", c.DoubleTalkDB, "want 0..60", "")
	}
	if c.MaxDelayMS < 20 || c.MaxDelayMS > 1000 {
		errs.Add(p+"max_delay_ms", c.MaxDelayMS, "want 20..1000", "")
	}
	if c.TailMS < 0 || c.TailMS > 1000 {
		errs.Add(p+"tail_ms", c.TailMS, "want 0..1000", "0: the measured default")
	}
	if c.RoomFile != "" && !filepath.IsAbs(c.RoomFile) {
		errs.Add(p+"room_file", c.RoomFile, "must be an absolute path", `or "" (the room is learnt again at every start)`)
	}
	if _, err := c.startupSound(); err != nil {
		errs.Append(err)
	}
	d := c.Duck
	if d.DepthDB <= 0 || d.DepthDB > 60 {
		errs.Add(p+"duck.depth_db", d.DepthDB, "want more than 0, at most 60", "to turn ducking off set duck.enabled: false")
	}
	if d.HoldMS < 50 || d.HoldMS > 30000 {
		errs.Add(p+"duck.hold_ms", d.HoldMS, "want 50..30000", "")
	}
	if d.AttackMS < 1 || d.AttackMS > 1000 {
		errs.Add(p+"duck.attack_ms", d.AttackMS, "want 1..1000", "")
	}
	if d.ReleaseMS < 1 || d.ReleaseMS > 5000 {
		errs.Add(p+"duck.release_ms", d.ReleaseMS, "want 1..5000", "")
	}
	if g := c.ClipGuard; g.MaxDB <= 0 || g.MaxDB > 30 {
		errs.Add(p+"clip_guard.max_db", g.MaxDB, "want more than 0, at most 30", "to turn the clip guard off set clip_guard.enabled: false")
	}
	if g := c.ClipGuard; g.RecoverMin < 0 || g.RecoverMin > 1440 {
		errs.Add(p+"clip_guard.recover_min", g.RecoverMin, "want 0..1440", "0: never")
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
// range 0..1000" or `noise_wav "x.wav": wav: ...` (key, value, problem).
var roomProblem = regexp.MustCompile(`^([a-z0-9_]+) ("(?:[^"\\]|\\.)*"|\S+):? (.+)$`)

// roomError names a problem of room.Config.Validate by its YAML path
// below prefix (duplex.sim_room).
func roomError(prefix string, err error) *field.Error {
	msg := strings.TrimPrefix(err.Error(), room.ErrConfig.Error()+": ")
	if m := roomProblem.FindStringSubmatch(msg); m != nil {
		e := &field.Error{Path: field.Join(prefix, m[1]), Value: m[2], Problem: m[3]}
		if strings.HasSuffix(m[1], "_wav") {
			e.Hint = "give a readable WAV file, or leave it empty for " + map[bool]string{true: "the synthetic impulse response", false: "the noise kind (noise)"}[m[1] == "ir_wav"]
		}
		return e
	}
	return &field.Error{Path: prefix, Problem: msg}
}

// startupSoundNoise is the duplex.startup_sound value for the built-in
// sound (warmup.Noise).
const startupSoundNoise = "noise"

// maxStartupSound is the longest start-up sound a WAV may hold: the mic is
// held while it plays.
const maxStartupSound = 30 * time.Second

// startupSound returns duplex.startup_sound at the player's 24 kHz, mono
// (nil for ""), or a *field.Error naming the problem.
func (c duplexConfig) startupSound() ([]int16, error) {
	if c.StartupSound != "" && c.StartupSound != startupSoundNoise && !filepath.IsAbs(c.StartupSound) {
		return nil, c.startupError("must be an absolute path")
	}
	s, err := loadStartupSound(c.StartupSound)
	if err != nil {
		return nil, c.startupError(err.Error())
	}
	return s, nil
}

func (c duplexConfig) startupError(problem string) error {
	return field.New(duplexSection+".startup_sound", c.StartupSound, problem, `want noise, an absolute path to a WAV file, or "" (none)`)
}

// loadStartupSound is a start-up sound (duplex.startup_sound, duplex-bench
// --startup-sound) at the player's 24 kHz, mono, as the agent plays it:
// nil for "", warmup.Noise at its defaults for "noise", else the WAV file
// v (0.1 s up to maxStartupSound, not silent) mixed to mono and resampled
// as `robot-agent say` does.
func loadStartupSound(v string) ([]int16, error) {
	switch v {
	case "":
		return nil, nil
	case startupSoundNoise:
		return warmup.Noise(warmup.DefaultDuration, hw.TTSFormat.SampleRate, warmup.DefaultDBFS, 1), nil
	}
	a, err := wav.ReadFile(v)
	if err != nil {
		return nil, err
	}
	if d := time.Duration(a.Frames()) * time.Second / time.Duration(max(a.SampleRate, 1)); d < 100*time.Millisecond || d > maxStartupSound {
		return nil, fmt.Errorf("%.2f s long: want 0.1 s up to %v", d.Seconds(), maxStartupSound)
	}
	s, err := toTTSFormat(a, 0)
	if err != nil {
		return nil, err
	}
	if err := notSilent(s, hw.TTSFormat.SampleRate); err != nil {
		return nil, err
	}
	return s, nil
}

// setupStartupSound wraps the speaker stream with duplex.startup_sound
// (full duplex only; above the robot's volume, so the sound follows it as
// the voice does) and returns the gate that holds the mic while it plays
// (nil: none configured).
func (a *agent) setupStartupSound(d duplexConfig) (*warmup.Sink, error) {
	sound, err := d.startupSound()
	if err != nil || sound == nil {
		return nil, err
	}
	w, err := warmup.New(a.speaker, sound, 0, a.clk)
	if err != nil {
		return nil, d.startupError(err.Error())
	}
	a.speaker = w
	a.log.Info("duplex: start-up sound: the echo canceller learns the room from it, the mic held until it has faded", "sound", d.StartupSound, "seconds", w.Duration().Seconds(), "tail_ms", warmup.DefaultTail.Milliseconds())
	return w, nil
}

// aecKind resolves auto to the best canceller built into this binary.
func (c duplexConfig) aecKind() string {
	if c.AEC == aecAuto {
		return aec.Best()
	}
	return c.AEC
}

// uplinkKind resolves auto to the measured default this binary can run
// (aec.BestUplink).
func (c duplexConfig) uplinkKind(kind string) string {
	if c.Uplink == aecAuto {
		return aec.BestUplink(kind)
	}
	return c.Uplink
}

// reverbGuard is SourceConfig.ReverbGuardMS for reverb_guard.
func (c duplexConfig) reverbGuard(o aec.Options) int { return reverbGuardMS(c.ReverbGuard, o) }

// reverbGuardMS is SourceConfig.ReverbGuardMS for a reverberation guard
// on or off with canceller o: its filter length (the reverberation beyond
// it is what the guard predicts), 0: off. The agent and duplex-bench both
// take it from here.
func reverbGuardMS(on bool, o aec.Options) int {
	if !on {
		return 0
	}
	return o.FilterMS()
}

// noiseGuard is SourceConfig.NoiseGuardDB for noise_guard_db (0: off).
func (c duplexConfig) noiseGuard() float64 {
	if c.NoiseGuardDB == 0 {
		return -1
	}
	return c.NoiseGuardDB
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
	a.duplex = d
	kind := d.aecKind()
	if kind == aec.KindNone {
		a.log.Info("duplex: no echo canceller; half-duplex gate while the robot speaks", "mode", duplexMode())
		return nil, nil
	}
	if f := a.speaker.Format(); f.Channels != 1 {
		return nil, fmt.Errorf("duplex: echo canceller needs a mono speaker stream, have %v", f)
	}
	up := d.uplinkKind(kind)
	opts := aec.Options{Kind: kind, Suppression: d.Suppression, NoiseSuppression: d.NoiseSuppression, Delay: d.WebRTCDelay, Uplink: up, TailMS: d.TailMS}
	c, err := aec.New(opts)
	if err != nil {
		return nil, fmt.Errorf("duplex.aec %q: %w", kind, err)
	}
	ref, err := aec.NewReference(a.clk, a.speaker.Format().SampleRate)
	if err != nil {
		c.Close()
		return nil, err
	}
	a.closers = append(a.closers, c.Close)
	a.aecTap = aec.NewTap(a.speaker, ref, a.clk)
	a.speaker = a.aecTap
	src := aec.NewSource(a.mic, ref, c, a.clk, aec.SourceConfig{MaxDelayMS: d.MaxDelayMS, DoubleTalkDB: d.DoubleTalkDB, GuardMarginDB: d.GuardMarginDB, DriftCompensation: d.DriftComp, NoiseGuardDB: d.noiseGuard(), LinearGuardDB: d.LinearGuardDB, ReverbGuardMS: d.reverbGuard(opts), SilentSpeaker: d.SilentSpeaker})
	a.mic = src
	a.aecRef, a.aecSrc = ref, src
	if d.RoomFile != "" && d.ReverbGuard {
		k := &roomKeeper{path: d.RoomFile, devices: a.audioDevicesID(), src: src, clk: a.clk, log: a.log}
		k.restore()
		a.room = k
		a.closers = append(a.closers, func() error { k.save(); return nil })
	} else if d.RoomFile != "" {
		a.log.Info("duplex: room_file unused: the reverberation guard is off (reverb_guard: false)")
	}
	a.log.Info("duplex: echo canceller on, full duplex (barge-in by voice while the robot speaks)", "aec", kind,
		"suppression", d.Suppression, "noise_suppression", d.NoiseSuppression, "drift_compensation", d.DriftComp, "guard_margin_db", d.GuardMarginDB, "noise_guard_db", d.NoiseGuardDB, "linear_guard_db", d.LinearGuardDB, "reverb_guard", d.ReverbGuard, "silent_speaker", d.SilentSpeaker, "tail_ms", d.TailMS, "uplink", up)
	if d.ClipGuard.Enabled {
		// Above the tap, like the duck: the reference is what the device
		// plays, lowered or not.
		g, err := clipguard.New(a.speaker, src, d.ClipGuard.config(), a.clk, a.reg, a.log)
		if err != nil {
			return nil, &field.Error{Path: duplexSection + ".clip_guard", Problem: err.Error()}
		}
		a.speaker = g
		a.log.Info("duplex: clip guard on (the robot's voice is lowered while its echo clips the mic)", "max_db", d.ClipGuard.MaxDB, "recover_min", d.ClipGuard.RecoverMin)
	}
	if d.Duck.Enabled {
		// Above the tap: the reference is exactly what the device plays,
		// ducked or not.
		dk, err := duck.New(a.speaker, d.Duck.config(), a.clk, a.reg)
		if err != nil {
			return nil, &field.Error{Path: duplexSection + ".duck", Problem: err.Error()}
		}
		a.speaker, a.ducker = dk, dk
		a.log.Info("duplex: local ducking on", "depth_db", d.Duck.DepthDB, "hold_ms", d.Duck.HoldMS)
	}
	return src, nil
}

// duckOnStart is the capture pump's FrameSink when ducking is on: the start
// of an utterance (the user may be talking over the robot) ducks the
// robot's voice at once; the duck ignores it when nothing plays.
type duckOnStart struct {
	capture.FrameSink
	d *duck.Sink
}

func (s duckOnStart) SendMic(f *capture.Frame) bool {
	if f.Flag == protocol.FlagStart {
		s.d.Duck()
	}
	return s.FrameSink.SendMic(f)
}

// duckingTTS tells the duck about interrupts, so a true barge-in keeps the
// voice down until playback stops instead of restoring it after the hold.
type duckingTTS struct {
	uplink.TTSSink
	d *duck.Sink
}

func (t duckingTTS) Interrupt(id uint32) uint32 {
	r := t.TTSSink.Interrupt(id)
	t.d.Interrupted()
	return r
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
