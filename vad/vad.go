// Package vad holds voice activity detectors for the capture pump, each a
// per-frame speech/non-speech decision on 16 kHz mono PCM16:
//
//   - KindEnergy: level above an adaptive noise floor (pure Go; the
//     capture pump's built-in detector, here as a Detector for
//     comparisons);
//   - KindWebRTC: WebRTC's GMM detector (libwebrtc-audio-processing's
//     WebRtcVad_*, build tag webrtcapm), modes 0..3 (aggressiveness);
//   - KindSpeex: speexdsp's preprocessor VAD (build tag speexdsp);
//   - KindSpectral: a statistical-model detector (Sohn's likelihood ratio
//     test on a 10 ms STFT with an MCRA noise estimate and an HMM
//     hangover; pure Go, the capture pump's default without an echo
//     canceller: see Spectral, capture.DetectorAuto and docs/benchmarks.md
//     "VAD on speech in noise");
//     Both take a speech-like background guard, on by default
//     (Options.BackgroundDB): in babble, a television or a room of
//     talkers, only a voice louder than that background is speech.
//   - KindVoiced: KindSpectral with periodicity (voicing) evidence from
//     the noise-suppressed spectrum (SpectralConfig.Voicing; pure Go,
//     optional: measured, it finds a few per cent more speech frames in
//     stationary noise and starts utterances in babble; docs/benchmarks.md
//     "Voicing evidence").
//
// Without the tag a cgo detector's constructor fails with an error wrapping
// ErrNotBuiltIn. A Detector is used by one goroutine and does not allocate
// per frame.
package vad

import (
	"errors"
	"fmt"
)

// Detector kinds.
const (
	KindEnergy   = "energy"
	KindWebRTC   = "webrtc"
	KindSpeex    = "speex"
	KindSpectral = "spectral"
	KindVoiced   = "voiced"
)

// KindVoiced's SpectralConfig.Voicing and VoicingMargin, chosen on
// development phrases (docs/benchmarks.md "Voicing evidence").
const (
	voicedWeight = 4.0
	voicedMargin = 0.4
)

// Kinds lists every kind.
var Kinds = []string{KindEnergy, KindWebRTC, KindSpeex, KindSpectral, KindVoiced}

// Errors.
var (
	ErrNotBuiltIn = errors.New("vad: detector not built into this binary")
	ErrConfig     = errors.New("vad: invalid options")
)

// Detector decides whether a frame is speech. active tells it whether an
// utterance is in progress (detectors with hysteresis use a lower
// threshold then). Frames are 10, 20 or 30 ms of 16 kHz mono.
type Detector interface {
	Kind() string
	Speech(frame []int16, active bool) bool
	Close() error
}

// Adapter is implemented by detectors that learn the background noise from
// the frames they see. SetAdapt(false) holds what was learnt for the
// following frames — the capture pump does so for frames an echo
// canceller's suppressor pushed far below the room's noise, which must not
// become the noise estimate — and SetAdapt(true) resumes learning.
type Adapter interface {
	SetAdapt(on bool)
}

// Provisional is implemented by detectors whose speech calls can be
// provisional (KindSpectral, KindVoiced with Options.FastOnset):
// Provisional reports whether the last frame's speech rests on an onset
// not yet confirmed, or one revoked within the frame. A caller that starts
// something on a run of speech (the capture pump's utterances) waits while
// it is true; the frames themselves are still called speech.
type Provisional interface {
	Provisional() bool
}

// BackgroundGuarded is implemented by detectors with a speech-like
// background guard (KindSpectral, KindVoiced): BackgroundGuardOn reports
// whether it judged the last frame's background to be speech (babble, a
// television) and now asks for a louder voice.
type BackgroundGuarded interface {
	BackgroundGuardOn() bool
}

// BackgroundMargin is the speech-like background guard's margin in dB
// that Options.BackgroundDB db gives: DefaultBackgroundDB for 0, 0 (off)
// for a negative value, else db.
func BackgroundMargin(db float64) float64 { return defaultOrOff(db, DefaultBackgroundDB) }

// defaultOrOff maps a configured dB value: def for 0, 0 (off) for a
// negative value, else db.
func defaultOrOff(db, def float64) float64 {
	switch {
	case db == 0:
		return def
	case db < 0:
		return 0
	}
	return db
}

// Options configure a Detector.
type Options struct {
	Kind string
	// FrameMS is the frame length: 10, 20 or 30 (the pump's frame_ms);
	// KindEnergy, KindSpectral and KindVoiced also take 40 and 60.
	FrameMS int
	// Mode is WebRTC's aggressiveness 0..3 (default 2); for speex the
	// speech probability to start, in percent (default 80); for spectral
	// and voiced the decision hangover in ms, 0..200
	// (SpectralConfig.HangoverMS, default 0).
	Mode int
	// BackgroundDB is KindSpectral's and KindVoiced's speech-like
	// background guard (SpectralConfig.BackgroundDB): 0 takes
	// DefaultBackgroundDB, a negative value turns it off, at most 40.
	BackgroundDB float64
	// FastOnset turns on KindSpectral's and KindVoiced's onset step
	// (SpectralConfig.FastOnset): a word's first hop called sooner in
	// steady noise; provisional until the plain rule or the spectrum's
	// shape confirms it (Provisional), so a room whose noise rises by a
	// few dB at once gets a few hops of provisional speech
	// (docs/benchmarks.md "The first hops of a word", "A provisional
	// onset step"). Off here; the capture pump's default detector (auto)
	// turns it on.
	FastOnset bool
	// Energy tunes KindEnergy (zero fields: capture's defaults); its
	// MinFloorDBFS also bounds KindSpectral's noise estimate.
	Energy EnergyConfig
}

// New returns the Detector for o.
func New(o Options) (Detector, error) {
	if o.FrameMS == 0 {
		o.FrameMS = 20
	}
	switch o.FrameMS {
	case 10, 20, 30:
	case 40, 60:
		if o.Kind != KindEnergy && o.Kind != KindSpectral && o.Kind != KindVoiced && o.Kind != "" {
			return nil, fmt.Errorf("%w: frame_ms %d: %s takes 10, 20 or 30", ErrConfig, o.FrameMS, o.Kind)
		}
	default:
		return nil, fmt.Errorf("%w: frame_ms %d is not 10, 20, 30, 40 or 60", ErrConfig, o.FrameMS)
	}
	if o.BackgroundDB > MaxBackgroundDB {
		return nil, fmt.Errorf("%w: background guard %g dB out of range: at most %g (negative: off)", ErrConfig, o.BackgroundDB, MaxBackgroundDB)
	}
	bg := BackgroundMargin(o.BackgroundDB)
	switch o.Kind {
	case KindEnergy, "":
		return NewEnergy(o.Energy, o.FrameMS), nil
	case KindSpectral:
		if o.Mode < 0 || o.Mode > specMaxHangMS {
			return nil, fmt.Errorf("%w: spectral mode (hangover ms) %d out of range 0..%d", ErrConfig, o.Mode, specMaxHangMS)
		}
		return NewSpectral(SpectralConfig{MinFloorDBFS: o.Energy.MinFloorDBFS, HangoverMS: o.Mode, BackgroundDB: bg, FastOnset: o.FastOnset}), nil
	case KindVoiced:
		if o.Mode < 0 || o.Mode > specMaxHangMS {
			return nil, fmt.Errorf("%w: voiced mode (hangover ms) %d out of range 0..%d", ErrConfig, o.Mode, specMaxHangMS)
		}
		return NewSpectral(SpectralConfig{MinFloorDBFS: o.Energy.MinFloorDBFS, HangoverMS: o.Mode, Voicing: voicedWeight, VoicingMargin: voicedMargin, BackgroundDB: bg, FastOnset: o.FastOnset}), nil
	case KindWebRTC:
		if o.Mode < 0 || o.Mode > 3 {
			return nil, fmt.Errorf("%w: webrtc mode %d out of range 0..3", ErrConfig, o.Mode)
		}
		return newWebRTC(o)
	case KindSpeex:
		return newSpeex(o)
	}
	return nil, fmt.Errorf("%w: kind %q is not one of %v", ErrConfig, o.Kind, Kinds)
}

// Available lists the kinds this binary can run.
func Available() []string {
	out := []string{KindEnergy, KindSpectral, KindVoiced}
	if webrtcBuiltIn {
		out = append(out, KindWebRTC)
	}
	if speexBuiltIn {
		out = append(out, KindSpeex)
	}
	return out
}
