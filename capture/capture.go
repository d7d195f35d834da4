// Package capture is the microphone pump: it reads fixed-size frames from an
// hw.AudioSource, timestamps them on the agent clock, groups them into
// utterances (the whole run in continuous mode, or energy-VAD segments with
// pre-roll and hangover in VAD mode) and hands them to a FrameSink without
// ever blocking on it.
//
// # Frames and flags
//
// Every frame handed to the sink carries the utterance id (1 for the first
// utterance of a Pump, +1 per utterance), a sequence number (+1 per frame
// handed over, dropped or not, so the receiver sees drops as gaps), a flag
// (protocol.FlagStart on the first delivered frame of an utterance,
// FlagContinue inside, FlagEnd on the last) and TS, the clock.Mono time at
// which the frame's first sample was captured: Read return time minus the
// frame duration, never decreasing. When Run stops in the middle of an
// utterance it sends an empty FlagEnd frame timestamped at the end of the
// last captured frame.
//
// If the sink drops the FlagStart frame, the next frame of the utterance
// carries FlagStart instead.
//
// # Half-duplex gate
//
// SetGate installs a Gate consulted once per frame. In VAD mode, while it
// reports true (the robot is speaking) no utterance starts, the pre-roll is
// discarded and the noise floor is frozen; an utterance in progress when
// the gate closes ends at once (that frame carries FlagEnd). Continuous
// mode ignores the gate: frames keep flowing and the gateway, which knows
// when it is sending speech, decides.
//
// # Concurrency
//
// Run is the only goroutine that calls src.Read and the sink; at most one
// Run may be active at a time. SetGate may be called from any goroutine; it
// and the per-frame gate check are lock-free. Gate implementations must be
// safe to call from the Run goroutine and should be a single atomic load.
package capture

import (
	"errors"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// Frame is one frame of mic audio handed to a FrameSink.
type Frame struct {
	Utterance uint32
	Seq       uint32
	Flag      protocol.Flag
	// TS is the clock.Mono time at which Samples[0] was captured.
	TS time.Duration
	// Samples are 16 kHz mono PCM, valid only during the SendMic call; they
	// are empty on a closing FlagEnd frame.
	Samples []int16
}

// FrameSink receives mic frames (typically the uplink's mic lane).
// SendMic must not block and must not retain f or f.Samples after it
// returns; it reports false if it dropped the frame.
type FrameSink interface {
	SendMic(f *Frame) bool
}

// Gate reports whether utterance onsets are suppressed (half-duplex: the
// robot is speaking).
type Gate interface {
	Gated() bool
}

// OnsetGuard reports whether the frame just read must not count as speech
// for starting an utterance (full duplex: the echo canceller found only the
// robot's own residual echo in it). Unlike a Gate it does not end an
// utterance in progress. It is consulted once per frame from the Run
// goroutine, right after the frame was read.
type OnsetGuard interface {
	EchoDominated() bool
}

// EchoFree is an optional capability of an OnsetGuard: whether the frame
// just read holds no echo at all (the robot has not played for the echo's
// tail). With a guard that lacks it, or while it reports false, the pump
// never shortens min speech (VADConfig.GradualStartMS): a canceller's
// residual echo bursts rise gradually too.
type EchoFree interface {
	EchoFree() bool
}

// DecisionSignal is an optional capability of an OnsetGuard: the audio the
// VAD judges for the frame just read, when it differs from the audio sent
// (an echo canceller whose uplink is a linear filter's output, free of
// suppression, while its residual echo suppressor's output, free of echo,
// decides). A frame of another length than the one read is ignored.
type DecisionSignal interface {
	DecisionFrame() []int16
}

// OnsetSignal is an optional capability of an OnsetGuard: for the frame
// just read, the same sound before any suppressor (an echo canceller's
// linear filter output), and whether the VAD's transient guard should
// judge the frame's onset there rather than in the decision frame. A
// suppressor that held a sound down and then lets it through makes any
// onset look abrupt, a user's first syllable over the robot's voice like
// a knock (vad.TransientGuard.FrameOnset). A frame of another length than
// the one read is ignored.
type OnsetSignal interface {
	OnsetFrame() (frame []int16, use bool)
}

// LostReporter is an optional capability of a source: whether the last
// Read returned a stand-in for audio the device did not capture (silence
// while the mic is gone: hw/portaudio's Source until a missing device
// opens and while a lost one is reopened; aec.Source for such reads and
// for digital silence it takes for an outage). The pump then treats the
// frame as an outage whether or not it knows the room yet (Pump.silence).
// Consulted from the Run goroutine right after the frame was read.
type LostReporter interface {
	Lost() bool
}

// GateFunc adapts a function to Gate.
type GateFunc func() bool

// Gated implements Gate.
func (f GateFunc) Gated() bool { return f() }

// Errors returned by NewPump and Run.
var (
	// ErrFormat is returned by NewPump for a source not in hw.MicFormat.
	ErrFormat = errors.New("capture: unsupported source format")
	// ErrRunning is returned by Run while another Run is active.
	ErrRunning = errors.New("capture: pump already running")
)

// Metric names.
const (
	MetricFrames     = "robot_agent_capture_frames_total"
	MetricDropped    = "robot_agent_capture_dropped_frames_total"
	MetricUtterances = "robot_agent_capture_utterances_total"
	MetricReadErrors = "robot_agent_capture_read_errors_total"
	// MetricBackground is 1 while the VAD's speech-like background guard
	// is on (vad.BackgroundGuarded), MetricBackgroundFrames counts the
	// frames judged so.
	MetricBackground       = "robot_agent_capture_vad_speechlike_background"
	MetricBackgroundFrames = "robot_agent_capture_vad_speechlike_background_frames_total"
	// MetricTransients counts runs of speech frames the VAD's transient
	// guard held back (vad.TransientGuard).
	MetricTransients = "robot_agent_capture_vad_transients_total"
	// MetricSilentFrames counts mic frames of digital silence (every
	// sample 0): a mic that delivered nothing (hw/portaudio's Source
	// pads an outage with them) or a muted one.
	MetricSilentFrames = "robot_agent_capture_silent_frames_total"
)
