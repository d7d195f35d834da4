package capture

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/vad"
)

// Capture modes.
const (
	// ModeContinuous streams every frame as one utterance per Run; the
	// gateway does voice activity detection.
	ModeContinuous = "continuous"
	// ModeVAD sends only utterances found by the local VAD.
	ModeVAD = "vad"
)

// Defaults applied to zero fields by WithDefaults.
const (
	DefaultFrameMS          = 20
	DefaultMode             = ModeContinuous
	DefaultStartDB          = 12.0
	DefaultStopDB           = 6.0
	DefaultMinFloorDBFS     = -70.0
	DefaultFloorRiseDBPerS  = 1.0
	DefaultPreRollMS        = 300
	DefaultHangoverMS       = 600
	DefaultMinSpeechMS      = 60
	DefaultGradualStartMS   = 40
	DefaultMaxUtteranceMS   = 30000
	maxPreRollMS            = 2000
	maxHangoverMS           = 5000
	maxMinSpeechMS          = 1000
	maxMaxUtteranceMS       = 10 * 60 * 1000
	maxStartDB              = 60.0
	maxFloorRiseDBPerS      = 20.0
	minMinFloorDBFS         = -100.0
	maxMinFloorDBFS         = -20.0
	validFrameMSDescription = "10, 20, 40 or 60"
)

// DetectorAuto, the default VAD detector, is chosen by measurement
// (docs/benchmarks.md "VAD on speech in noise", "A provisional onset
// step"): vad.KindSpectral with its provisional onset step (pure Go,
// built in everywhere; as detector spectral with fast_onset true),
// except when an echo canceller's onset guard is installed (full duplex,
// SetOnsetGuard or a source that is an OnsetGuard): then the built-in
// energy detector, because the spectral detector also hears the
// canceller's residual echo (23 false barge-ins in 20 replies at 10 dB
// SNR, energy 0; docs/benchmarks.md).
const DetectorAuto = "auto"

// DefaultDetector is the default of VADConfig.Detector.
const DefaultDetector = DetectorAuto

// Config configures a Pump. Zero fields take the defaults above.
type Config struct {
	// FrameMS is the frame length in milliseconds: 10, 20 (default), 40 or 60.
	FrameMS int `yaml:"frame_ms"`
	// Mode is ModeContinuous (default) or ModeVAD.
	Mode string `yaml:"mode"`
	// VAD tunes ModeVAD; ignored in continuous mode.
	VAD VADConfig `yaml:"vad"`
}

// VADConfig tunes the local voice activity detection: a per-frame detector
// (Detector) and the utterance logic around it (pre-roll, min speech,
// hangover, max utterance). Millisecond values are rounded up to whole
// frames.
//
// With Detector "energy", each frame's RMS level (dBFS) is compared with
// an adaptive noise floor that, outside utterances, drops at once to any
// quieter frame and rises slowly (FloorRiseDBPerS) otherwise; thresholds
// are measured from max(floor, MinFloorDBFS).
type VADConfig struct {
	// StartDB: a frame is speech, for starting an utterance, when its level
	// exceeds the floor by more than this (default 12).
	StartDB float64 `yaml:"start_db"`
	// StopDB: inside an utterance a frame still counts as speech above
	// floor + StopDB (default 6; at most StartDB).
	StopDB float64 `yaml:"stop_db"`
	// MinFloorDBFS bounds the floor from below so that near-digital silence
	// does not make any faint sound speech (default -70).
	MinFloorDBFS float64 `yaml:"min_floor_dbfs"`
	// FloorRiseDBPerS is how fast the floor follows a louder background
	// (default 1 dB/s).
	FloorRiseDBPerS float64 `yaml:"floor_rise_db_per_s"`
	// PreRollMS of audio before the first speech frame is sent at onset
	// (default 300).
	PreRollMS int `yaml:"preroll_ms"`
	// HangoverMS of non-speech ends an utterance; these frames are sent, the
	// last with FlagEnd (default 600).
	HangoverMS int `yaml:"hangover_ms"`
	// MinSpeechMS of consecutive speech frames starts an utterance
	// (default 60).
	MinSpeechMS int `yaml:"min_speech_ms"`
	// MaxUtteranceMS forces an end (frames sent, pre-roll included); speech
	// that goes on starts a new utterance (default 30000).
	MaxUtteranceMS int `yaml:"max_utterance_ms"`
	// Detector is the per-frame speech decision: "auto" (default:
	// spectral, or energy with an echo canceller; see DetectorAuto),
	// "spectral" (a statistical-model detector with a noise estimate per
	// frequency band, pure Go), "voiced" (spectral with periodicity
	// evidence, optional: see vad.KindVoiced), "energy" (the
	// level-over-floor detector above, pure Go),
	// "webrtc" (WebRTC's GMM VAD, build tag webrtcapm) or "speex"
	// (speexdsp's preprocessor VAD, build tag speexdsp); see package vad
	// and docs/benchmarks.md. The pre-roll, min-speech, hangover and
	// max-utterance logic applies to every detector; the dB fields only to
	// energy, except MinFloorDBFS, which also bounds spectral's noise
	// estimate.
	Detector string `yaml:"detector"`
	// DetectorMode is the webrtc aggressiveness 0..3 (default 0 when
	// unset), the speex start probability in percent (default 80) or the
	// spectral (and voiced) detector's decision hangover in ms, 0..200 (default 0;
	// see vad.SpectralConfig.HangoverMS; not with auto, which uses
	// spectral's defaults).
	DetectorMode int `yaml:"detector_mode"`
	// BackgroundDB is the spectral (and voiced) detector's speech-like
	// background guard (vad.Options.BackgroundDB): in babble, a
	// television or a room of talkers, a frame is speech only when it is
	// this much louder than that background. 0: the default
	// (vad.DefaultBackgroundDB, 10); negative: off; at most 40. Ignored by
	// the other detectors.
	BackgroundDB float64 `yaml:"background_db"`
	// TransientDecayDB is the VAD's transient guard (vad.TransientGuard),
	// for every detector: a run of speech frames that peaks in its first
	// two frames and then decays by at least this many dB per 20 ms — a
	// knock, a clap, a servo's clunk — does not start an utterance until a
	// voice rises out of it. 0: the default
	// (vad.DefaultTransientDecayDB, 1.5); negative: off; at most 20.
	TransientDecayDB float64 `yaml:"transient_decay_db"`
	// GradualStartMS is the min speech for a run whose onset the
	// transient guard found gradual (no abrupt attack in its first two
	// frames: a voice rising, not a knock, which keeps MinSpeechMS for
	// the guard to judge its decay). Only without an echo canceller or
	// while it hears no echo (EchoFree), since the residual of the robot's
	// own voice rises gradually too; never with the guard off. 0: the
	// default (DefaultGradualStartMS, 40); negative: off (MinSpeechMS);
	// more than MinSpeechMS counts as MinSpeechMS. Measured in
	// docs/benchmarks.md "A sooner start for gradual onsets".
	GradualStartMS int `yaml:"gradual_start_ms"`
	// FastOnset turns on the spectral (and voiced) detector's onset step
	// (vad.Options.FastOnset) for an explicit detector spectral or
	// voiced; auto (the default) has it on whatever this says. In steady
	// noise a word is called 20 ms sooner and more of its first frames
	// are found; an onset the plain rule or the spectrum's shape does not
	// confirm within 60 ms is revoked, and no utterance starts on it
	// meanwhile, so a room whose noise rises by a few dB at once starts
	// as many utterances as without it. docs/benchmarks.md "The first
	// hops of a word", "A provisional onset step".
	FastOnset bool `yaml:"fast_onset"`
}

// WithDefaults returns c with zero fields replaced by defaults.
func (c Config) WithDefaults() Config {
	setInt := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	setF := func(p *float64, d float64) {
		if *p == 0 {
			*p = d
		}
	}
	setInt(&c.FrameMS, DefaultFrameMS)
	if c.Mode == "" {
		c.Mode = DefaultMode
	}
	v := &c.VAD
	setF(&v.StartDB, DefaultStartDB)
	setF(&v.StopDB, DefaultStopDB)
	setF(&v.MinFloorDBFS, DefaultMinFloorDBFS)
	setF(&v.FloorRiseDBPerS, DefaultFloorRiseDBPerS)
	setInt(&v.PreRollMS, DefaultPreRollMS)
	setInt(&v.HangoverMS, DefaultHangoverMS)
	setInt(&v.MinSpeechMS, DefaultMinSpeechMS)
	setInt(&v.GradualStartMS, DefaultGradualStartMS)
	setInt(&v.MaxUtteranceMS, DefaultMaxUtteranceMS)
	if v.Detector == "" {
		v.Detector = DefaultDetector
	}
	return c
}

// Validate checks c (after WithDefaults) and returns every problem found,
// each a *field.Error naming the field (its YAML key below the section that
// holds this Config, e.g. "frame_ms", "vad.start_db") and its value.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs field.List
	rng := func(path string, v any, lo, hi any) {
		errs.Add(path, v, fmt.Sprintf("out of range %v..%v", lo, hi), "")
	}
	switch c.FrameMS {
	case 10, 20, 40, 60:
	default:
		errs.Add("frame_ms", c.FrameMS, "want "+validFrameMSDescription, "")
	}
	// auto is spectral or energy: both built in, both take every frame_ms.
	if c.VAD.Detector != DetectorAuto && !slices.Contains(vad.Kinds, c.VAD.Detector) {
		errs.Add("vad.detector", c.VAD.Detector, fmt.Sprintf("want auto or one of %v", vad.Kinds), "")
	} else if c.VAD.Detector != DetectorAuto && !slices.Contains(vad.Available(), c.VAD.Detector) {
		errs.Add("vad.detector", c.VAD.Detector, "not built into this binary",
			fmt.Sprintf("needs cgo and its build tag, see package vad; built in: %s", strings.Join(vad.Available(), ", ")))
	} else if c.VAD.Detector != DetectorAuto && c.VAD.Detector != vad.KindEnergy && c.VAD.Detector != vad.KindSpectral && c.VAD.Detector != vad.KindVoiced && (c.FrameMS == 40 || c.FrameMS == 60) {
		errs.Add("vad.detector", c.VAD.Detector, fmt.Sprintf("takes frames of 10, 20 or 30 ms, not frame_ms %d", c.FrameMS), "use energy or spectral, or frame_ms 20")
	}
	if c.Mode != ModeContinuous && c.Mode != ModeVAD {
		errs.Add("mode", c.Mode, "want continuous or vad", "")
	}
	v := c.VAD
	if v.StartDB < 0 || v.StartDB > maxStartDB {
		rng("vad.start_db", v.StartDB, 0, maxStartDB)
	}
	if v.StopDB < 0 || v.StopDB > v.StartDB {
		errs.Add("vad.stop_db", v.StopDB, fmt.Sprintf("out of range 0..start_db (%v)", v.StartDB), "")
	}
	if v.MinFloorDBFS < minMinFloorDBFS || v.MinFloorDBFS > maxMinFloorDBFS {
		rng("vad.min_floor_dbfs", v.MinFloorDBFS, minMinFloorDBFS, maxMinFloorDBFS)
	}
	if v.FloorRiseDBPerS < 0 || v.FloorRiseDBPerS > maxFloorRiseDBPerS {
		rng("vad.floor_rise_db_per_s", v.FloorRiseDBPerS, 0, maxFloorRiseDBPerS)
	}
	if v.BackgroundDB > vad.MaxBackgroundDB {
		errs.Add("vad.background_db", v.BackgroundDB, fmt.Sprintf("out of range: at most %v", vad.MaxBackgroundDB), "negative: off, 0: the default")
	}
	if v.TransientDecayDB > vad.MaxTransientDecayDB || math.IsNaN(v.TransientDecayDB) {
		errs.Add("vad.transient_decay_db", v.TransientDecayDB, fmt.Sprintf("out of range: at most %v", vad.MaxTransientDecayDB), "negative: off, 0: the default")
	}
	if v.PreRollMS < 0 || v.PreRollMS > maxPreRollMS {
		rng("vad.preroll_ms", v.PreRollMS, 0, maxPreRollMS)
	}
	if v.HangoverMS < 0 || v.HangoverMS > maxHangoverMS {
		rng("vad.hangover_ms", v.HangoverMS, 0, maxHangoverMS)
	}
	if v.MinSpeechMS < 0 || v.MinSpeechMS > maxMinSpeechMS {
		rng("vad.min_speech_ms", v.MinSpeechMS, 0, maxMinSpeechMS)
	}
	if v.GradualStartMS > maxMinSpeechMS {
		errs.Add("vad.gradual_start_ms", v.GradualStartMS, fmt.Sprintf("out of range: at most %d", maxMinSpeechMS), "negative: off, 0: the default")
	}
	if v.MaxUtteranceMS < 0 || v.MaxUtteranceMS > maxMaxUtteranceMS {
		rng("vad.max_utterance_ms", v.MaxUtteranceMS, 0, maxMaxUtteranceMS)
	} else if least := v.PreRollMS + v.MinSpeechMS + c.FrameMS; v.MaxUtteranceMS < least {
		errs.Add("vad.max_utterance_ms", v.MaxUtteranceMS, fmt.Sprintf("shorter than preroll_ms + min_speech_ms + frame_ms (%d)", least), "")
	}
	return errs.Err()
}

// frames converts ms to whole frames, rounding up.
func (c Config) frames(ms int) int { return (ms + c.FrameMS - 1) / c.FrameMS }
