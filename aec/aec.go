// Package aec is the robot's acoustic echo canceller: it removes from the
// microphone signal the robot's own voice, using as far-end reference the
// exact samples handed to the output device.
//
// Three parts:
//
//   - Canceller: one library's echo canceller (+ optional noise
//     suppression) on 10 ms frames of 16 kHz mono. Implementations wrap
//     WebRTC's audio processing module (build tag webrtcapm,
//     libwebrtc-audio-processing) and speexdsp's MDF canceller with its
//     preprocessor (build tag speexdsp, libspeexdsp); without the tag their
//     constructors fail with an error wrapping ErrNotBuiltIn. KindNone
//     passes the mic through (the baseline of every measurement).
//   - Reference: the far-end reference, a lock-free single-producer /
//     single-consumer ring of 16 kHz samples positioned on the agent clock
//     at the time they reach the DAC (from hw.LatencyReporter, or exactly
//     from a sink that knows where its blocks play: WrittenEnd). Tap wraps
//     the speaker to fill it.
//   - Source: wraps the mic; every Read pulls the far-end samples that were
//     playing when the mic captured its samples (again via
//     hw.LatencyReporter, or exactly from a source that knows when its
//     samples were captured: CapturedEnd), refines the alignment with a
//     delay estimator (envelope cross-correlation), optionally compensates
//     the clock drift between separate devices (drift.go: the clock ratio
//     from the echo's sub-sample lag, the far end read at that ratio), and
//     runs the Canceller.
//
// # Concurrency
//
// Tap.Write runs on the playback goroutine (the Reference's producer),
// Source.Read on the capture goroutine (its consumer). Neither locks or
// allocates per frame.
package aec

import (
	"errors"
	"fmt"
	"slices"
)

// Rate and FrameSamples: the cancellers work on 10 ms frames at 16 kHz.
const (
	Rate         = 16000
	FrameSamples = Rate / 100
)

// Canceller kinds.
const (
	KindNone   = "none"
	KindWebRTC = "webrtc"
	KindSpeex  = "speex"
)

// Kinds lists the accepted kinds.
var Kinds = []string{KindNone, KindWebRTC, KindSpeex}

// Errors.
var (
	// ErrNotBuiltIn: the canceller's library was not compiled in.
	ErrNotBuiltIn = errors.New("aec: canceller not built into this binary")
	// ErrConfig wraps invalid options.
	ErrConfig = errors.New("aec: invalid options")
)

// Canceller removes the echo of far from near. Process is called from one
// goroutine; near, far and out hold FrameSamples samples; out may be near.
// It does not allocate.
type Canceller interface {
	Kind() string
	Process(out, near, far []int16)
	// Reset forgets the adapted echo path (the far end was shifted in
	// time: re-adapting from scratch is faster than unlearning).
	Reset()
	Close() error
}

// Options configure a Canceller.
type Options struct {
	// Kind is KindWebRTC, KindSpeex or KindNone.
	Kind string `yaml:"kind"`
	// TailMS is the echo tail speex's adaptive filter models: the speex
	// canceller's (KindSpeex; default DefaultTailMS) and the linear filter
	// beside WebRTC's canceller (Uplink linear or linear-gated; default
	// DefaultLinearTailMS). WebRTC's own filter length is fixed (extended
	// filter: 128 ms).
	TailMS int `yaml:"tail_ms"`
	// NoiseSuppression turns on the library's noise suppressor after the
	// canceller.
	NoiseSuppression bool `yaml:"noise_suppression"`
	// AGC turns on the library's automatic gain control.
	AGC bool `yaml:"agc"`
	// Suppression is the WebRTC residual-echo suppressor's aggressiveness:
	// "low", "moderate" or "high" (default DefaultSuppression). Higher
	// removes more residual echo and more of the user's voice in
	// double-talk.
	Suppression string `yaml:"suppression"`
	// Delay is how WebRTC's canceller finds the echo in its filter:
	// DelayModeEstimator ("estimator": Source's delay estimator takes the delay
	// out and the APM trusts it) or DelayModeAgnostic ("agnostic": the APM's
	// own delay-agnostic mode on top). Default DefaultDelay.
	Delay string `yaml:"delay"`
	// DoubleTalkSuppression, if set, is the WebRTC suppression level used
	// while Source finds the user talking over the robot (reads whose echo
	// was reduced less than the guard threshold while the far end plays);
	// "" keeps Suppression throughout.
	DoubleTalkSuppression string `yaml:"double_talk_suppression"`
	// ShortFilter turns WebRTC's extended filter (128 ms) off (48 ms);
	// for measurements.
	ShortFilter bool `yaml:"short_filter"`
	// Uplink is what Source hands on as the mic signal (the audio sent to
	// the gateway): UplinkCanceller ("canceller", default) the canceller's
	// output; UplinkLinear ("linear") the output of a linear adaptive
	// filter alone (speex MDF, no residual echo suppressor: the user's
	// voice is not suppressed in double talk), while the onset guard and
	// the VAD keep judging the canceller's output (Source.DecisionFrame).
	// With Kind speex that is its own filter's output before the
	// preprocessor; with Kind webrtc a speex MDF filter runs beside the
	// APM (needs the speexdsp tag too). UplinkLinearGated ("linear-gated"):
	// the linear filter's output while the onset guard finds more than
	// echo in the mic (the user) and for gateHoldMS after, the canceller's
	// otherwise, crossfaded over a read: the residual echo the linear
	// filter leaves is sent only while the user talks. "" is
	// UplinkCanceller; the agent's default is BestUplink.
	Uplink string `yaml:"uplink"`
}

// Uplink sources.
const (
	UplinkCanceller   = "canceller"
	UplinkLinear      = "linear"
	UplinkLinearGated = "linear-gated"
)

var uplinks = []string{UplinkCanceller, UplinkLinear, UplinkLinearGated}

// DefaultUplink is the measured default of the agent's duplex.uplink
// (docs/audio.md), where this binary can run it (BestUplink).
const DefaultUplink = UplinkLinearGated

// WebRTC delay modes.
const (
	DelayModeEstimator = "estimator"
	DelayModeAgnostic  = "agnostic"
)

// DefaultDelay is the measured default (docs/audio.md).
const DefaultDelay = DelayModeAgnostic

// Suppression levels.
var suppressionLevels = []string{"low", "moderate", "high"}

// DefaultSuppression is the measured default (docs/audio.md).
const DefaultSuppression = "moderate"

func suppressionLevel(s string) int {
	for i, v := range suppressionLevels {
		if v == s {
			return i
		}
	}
	return 1
}

// DefaultTailMS is the speex canceller's filter length (KindSpeex).
const DefaultTailMS = 128

// DefaultLinearTailMS is the filter length of the linear filter beside
// WebRTC's canceller (Uplink linear, linear-gated), measured
// (docs/benchmarks.md, "A linear filter that covers the room"): WebRTC's
// suppressor holds a user who talks over the robot in a reverberant room
// down, and the linear filter's output is how the guards find them there;
// with 128 ms the filter left the room's reverberation beyond its tail
// (RT60 0.5 s: 13–19 dB median reduction), which hid the user.
const DefaultLinearTailMS = 256

func (o Options) withDefaults() Options {
	if o.Suppression == "" {
		o.Suppression = DefaultSuppression
	}
	if o.Delay == "" {
		o.Delay = DefaultDelay
	}
	if o.Uplink == "" {
		o.Uplink = UplinkCanceller
	}
	return o
}

// FilterMS is the echo tail the canceller's adaptive filters model (ms),
// what SourceConfig.ReverbGuardMS should be: speex's TailMS (default
// DefaultTailMS); with WebRTC the linear filter's beside it (TailMS,
// default DefaultLinearTailMS), taken for WebRTC alone too (its own filter
// is shorter, so the guard then errs towards less reverberation).
func (o Options) FilterMS() int {
	switch {
	case o.TailMS > 0:
		return o.TailMS
	case o.Kind == KindSpeex:
		return DefaultTailMS
	}
	return DefaultLinearTailMS
}

// Validate checks o, naming field and value.
func (o Options) Validate() error {
	var errs []error
	switch o.Kind {
	case KindNone, KindWebRTC, KindSpeex:
	default:
		errs = append(errs, fmt.Errorf("%w: kind %q is not one of %v", ErrConfig, o.Kind, Kinds))
	}
	if o.Suppression != "" && !slices.Contains(suppressionLevels, o.Suppression) {
		errs = append(errs, fmt.Errorf("%w: suppression %q is not one of %v", ErrConfig, o.Suppression, suppressionLevels))
	}
	if o.DoubleTalkSuppression != "" && !slices.Contains(suppressionLevels, o.DoubleTalkSuppression) {
		errs = append(errs, fmt.Errorf("%w: double_talk_suppression %q is not one of %v", ErrConfig, o.DoubleTalkSuppression, suppressionLevels))
	}
	if o.Delay != "" && o.Delay != DelayModeEstimator && o.Delay != DelayModeAgnostic {
		errs = append(errs, fmt.Errorf("%w: delay %q is not %s or %s", ErrConfig, o.Delay, DelayModeEstimator, DelayModeAgnostic))
	}
	if o.Uplink != "" && !slices.Contains(uplinks, o.Uplink) {
		errs = append(errs, fmt.Errorf("%w: uplink %q is not one of %v", ErrConfig, o.Uplink, uplinks))
	}
	if o.Uplink != "" && o.Uplink != UplinkCanceller && o.Kind == KindNone {
		errs = append(errs, fmt.Errorf("%w: uplink %s needs a canceller (kind %s)", ErrConfig, o.Uplink, KindNone))
	}
	if o.TailMS < 0 || o.TailMS > 1000 {
		errs = append(errs, fmt.Errorf("%w: tail_ms %d out of range 0..1000", ErrConfig, o.TailMS))
	}
	return errors.Join(errs...)
}

// New returns the Canceller for o.
func New(o Options) (Canceller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	switch o.Kind {
	case KindWebRTC:
		c, err := newWebRTC(o)
		if err != nil || o.Uplink == UplinkCanceller {
			return c, err
		}
		tail := o.TailMS
		if tail == 0 {
			tail = DefaultLinearTailMS
		}
		lin, err := newSpeexLinear(tail)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("aec: uplink %s: %w", o.Uplink, err)
		}
		return newDual(c, lin, o.Uplink == UplinkLinearGated), nil
	case KindSpeex:
		return newSpeex(o)
	}
	return passthrough{}, nil
}

// linearOuter is implemented by cancellers with a second output for the
// uplink (Options.Uplink linear): the last Process's linear filter output.
type linearOuter interface {
	Linear() []int16
	// Gated: the linear output goes up only while the user talks
	// (UplinkLinearGated).
	Gated() bool
}

// linearFilter is a linear adaptive echo filter without residual echo
// suppression (speex MDF).
type linearFilter interface {
	Process(out, near, far []int16)
	Reset()
	Close() error
}

// dual runs a linear filter beside the main canceller: the main one's
// output decides (onset guard, VAD), the linear one's goes up. The linear
// filter gets the far end defaultMarginMS before its echo rather than the
// main canceller's lead, through a delay line, so its tail covers the room.
// The line's length follows the lead Source actually gives (SetLead): an
// echo that arrives sooner than the main canceller's lead (a room whose
// delay beyond the device latencies is under 48 ms) leaves the far end
// that much less lead, and a line of the full 40 ms would then hand the
// far end to the linear filter after its echo, where no filter can cancel
// it (measured: 0–1 dB of reduction over 8 minutes at a 20 ms delay, so
// the uplink carried the robot's voice whenever the user talked).
// Its output is delayed by the main canceller's output delay
// (outputDelayer), so that the two outputs line up sample for sample: the
// gated uplink crossfades between them, and a crossfade between signals
// 7 ms apart is a comb filter and a jump of the uplink's timing.
type dual struct {
	main     Canceller
	lin      linearFilter
	line     []int16 // far-end delay line: the last maxDelay+FrameSamples samples
	delay    int     // the line's delay now (samples), 0..maxDelay
	maxDelay int
	oline    []int16 // linear output delay line: the last odelay+FrameSamples samples
	odelay   int
	lout     []int16
	gated    bool
}

// outputDelayer is implemented by cancellers whose output lags their input
// (samples).
type outputDelayer interface {
	OutputDelay() int
}

func newDual(main Canceller, lin linearFilter, gated bool) *dual {
	lead := defaultMarginMS
	if l, ok := main.(leader); ok {
		lead = l.LeadMS()
	}
	delay := max(0, lead-defaultMarginMS) * Rate / 1000
	odelay := 0
	if o, ok := main.(outputDelayer); ok {
		odelay = o.OutputDelay()
	}
	return &dual{main: main, lin: lin, delay: delay, maxDelay: delay, line: make([]int16, delay+FrameSamples),
		odelay: odelay, oline: make([]int16, odelay+FrameSamples), lout: make([]int16, FrameSamples), gated: gated}
}

func (d *dual) Kind() string { return d.main.Kind() }

func (d *dual) Process(out, near, far []int16) {
	copy(d.line, d.line[FrameSamples:])
	copy(d.line[d.maxDelay:], far[:FrameSamples])
	copy(d.oline, d.oline[FrameSamples:])
	// The linear filter first: out may be near. The far end delay samples
	// ago starts at maxDelay-delay.
	d.lin.Process(d.oline[d.odelay:], near, d.line[d.maxDelay-d.delay:][:FrameSamples])
	copy(d.lout, d.oline[:FrameSamples])
	d.main.Process(out, near, far)
}

// FilterMS implements filterSpanner for the main canceller (0: unknown).
func (d *dual) FilterMS() int {
	if f, ok := d.main.(filterSpanner); ok {
		return f.FilterMS()
	}
	return 0
}

// OutputDelay implements outputDelayer (both outputs lag by the main
// canceller's delay).
func (d *dual) OutputDelay() int { return d.odelay }

func (d *dual) Linear() []int16 { return d.lout }
func (d *dual) Gated() bool     { return d.gated }

func (d *dual) Reset() {
	d.main.Reset()
	d.lin.Reset()
	clear(d.line)
	clear(d.oline)
}

func (d *dual) Close() error {
	return errors.Join(d.lin.Close(), d.main.Close())
}

// SetLead implements leadSetter: the far end reaches Process lead samples
// before its echo. The delay line keeps the linear filter's far end
// defaultMarginMS ahead of the echo (or as far ahead as lead allows). Like
// Source's own moves of the far end it changes only beyond the tolerances
// (shrinkTolMS too late, growTolMS too early): each change resets the
// linear filter, which then re-adapts.
func (d *dual) SetLead(lead int) bool {
	want := min(max(0, lead-defaultMarginMS*Rate/1000), d.maxDelay)
	if !beyondTolerance(want, d.delay) {
		return false
	}
	d.delay = want
	d.lin.Reset()
	clear(d.line)
	return true
}

// LeadMS implements leader with the main canceller's lead.
func (d *dual) LeadMS() int {
	if l, ok := d.main.(leader); ok {
		return l.LeadMS()
	}
	return defaultMarginMS
}

// DoubleTalk implements doubleTalker for the main canceller.
func (d *dual) DoubleTalk(on bool) {
	if t, ok := d.main.(doubleTalker); ok {
		t.DoubleTalk(on)
	}
}

// Available lists the kinds this binary can run (KindNone always).
func Available() []string {
	out := []string{KindNone}
	if webrtcBuiltIn {
		out = append(out, KindWebRTC)
	}
	if speexBuiltIn {
		out = append(out, KindSpeex)
	}
	return out
}

// Best returns the default kind for this binary: the measured best that is
// built in (docs/audio.md: WebRTC, then speex), or KindNone.
func Best() string {
	switch {
	case webrtcBuiltIn:
		return KindWebRTC
	case speexBuiltIn:
		return KindSpeex
	}
	return KindNone
}

// BestUplink is the measured default uplink (DefaultUplink) for a
// canceller of kind when this binary can run it, else UplinkCanceller.
func BestUplink(kind string) string {
	if kind != KindWebRTC || !speexBuiltIn {
		// Measured with WebRTC only; it needs speex's filter.
		return UplinkCanceller
	}
	return DefaultUplink
}

// leader is implemented by cancellers whose filter needs the far end
// handed in earlier than the echo by more than Source's default margin.
type leader interface {
	// LeadMS is how much earlier than its echo the far end should reach
	// the canceller.
	LeadMS() int
}

// leadSetter is implemented by cancellers that align a filter of their
// own behind the far end they are handed (dual): Source tells them the
// far end's actual lead over its echo (samples), which is less than
// LeadMS when the echo arrives sooner than that. SetLead reports whether
// the alignment moved (the filter re-adapts, as after a move of the far
// end).
type leadSetter interface {
	SetLead(lead int) bool
}

// filterSpanner is implemented by cancellers that know how far their own
// adaptive filter reaches along the far end they are handed (ms): what
// they leave of the echo, where their suppressor lets it through, is the
// part beyond it. dual answers for its main canceller.
type filterSpanner interface {
	FilterMS() int
}

// doubleTalker is implemented by cancellers that change their residual
// echo suppression while the user talks over the far end.
type doubleTalker interface {
	DoubleTalk(on bool)
}

type passthrough struct{}

func (passthrough) Kind() string { return KindNone }
func (passthrough) Process(out, near, _ []int16) {
	copy(out, near)
}
func (passthrough) Close() error { return nil }
func (passthrough) Reset()       {}
