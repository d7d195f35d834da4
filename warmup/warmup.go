// Package warmup plays a sound once when the agent starts, before the first
// reply, so that the echo canceller learns the room from it: a broadband
// sound (Noise) excites every frequency at once where speech excites a
// few at a time, and a canceller that has only heard its own voice for a
// few seconds cannot yet tell a user who talks over it from its echo
// (docs/benchmarks.md "A start-up sound the canceller learns the room
// from"). While the sound plays and for a tail after it, Sink holds the
// mic (it is a capture.Gate): nobody is talking to the robot yet, and the
// sound's reverberation must not start an utterance.
package warmup

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// ErrFormat: the sink is not mono (the canceller's reference is).
var ErrFormat = errors.New("warmup: the speaker stream must be mono")

// DefaultTail is how long the mic stays held after the sound: its
// reverberation in a hall (RT60 1.5 s) falls 40 dB in 1 s.
const DefaultTail = time.Second

// grace is how long after New the mic is released at the latest when the
// sound never started (the speaker was never written): a mic held for
// ever would be worse than a false start.
const grace = 5 * time.Second

// Sink adds a sound once to the stream written through it, from the first
// Write on, mixed with what is written (saturating), then passes the
// stream through unchanged.
//
// Write is called from the playback goroutine only (hw.AudioSink); Gated
// from any goroutine (the capture pump's).
type Sink struct {
	hw.AudioSink
	clk   clock.Clock
	sound []int16
	tail  time.Duration
	buf   []int16 // Write's mixed copy (the caller's p is not ours)
	pos   int     // samples of sound played (Write's goroutine)

	// until is the clock reading (ns) at which Gated turns false: the
	// end of the sound plus the tail once it has started, New's time
	// plus the sound, the tail and grace before.
	until atomic.Int64
	ended atomic.Bool
}

// New wraps sink with sound (at the sink's rate, mono), holding the mic
// until tail after the sound has played (DefaultTail if tail is 0).
func New(sink hw.AudioSink, sound []int16, tail time.Duration, clk clock.Clock) (*Sink, error) {
	if sink.Format().Channels != 1 {
		return nil, ErrFormat
	}
	if tail == 0 {
		tail = DefaultTail
	}
	s := &Sink{AudioSink: sink, clk: clk, sound: sound, tail: tail}
	if len(sound) == 0 {
		s.ended.Store(true) // until 0: never held
		return s, nil
	}
	s.until.Store(int64(clk.Mono() + s.Duration() + tail + grace))
	return s, nil
}

// Duration is how long the sound plays.
func (s *Sink) Duration() time.Duration {
	return time.Duration(len(s.sound)) * time.Second / time.Duration(max(s.AudioSink.Format().SampleRate, 1))
}

// Write implements hw.AudioSink.
func (s *Sink) Write(p []int16) error {
	if s.pos >= len(s.sound) {
		return s.AudioSink.Write(p)
	}
	if s.pos == 0 {
		s.until.Store(int64(s.clk.Mono() + s.Duration() + s.tail))
	}
	if cap(s.buf) < len(p) {
		s.buf = make([]int16, len(p))
	}
	out := s.buf[:len(p)]
	for i, v := range p {
		if s.pos < len(s.sound) {
			out[i] = int16(max(-32768, min(32767, int32(v)+int32(s.sound[s.pos]))))
			s.pos++
		} else {
			out[i] = v
		}
	}
	if s.pos >= len(s.sound) {
		s.ended.Store(true)
	}
	return s.AudioSink.Write(out)
}

// Gated implements capture.Gate: true until the tail after the sound has
// passed (or, if the speaker is never written, grace after that).
func (s *Sink) Gated() bool {
	u := s.until.Load()
	return u != 0 && int64(s.clk.Mono()) < u
}

// Played reports whether the whole sound has been written.
func (s *Sink) Played() bool { return s.ended.Load() }

// Unwrap returns the wrapped sink (hw.FindSink).
func (s *Sink) Unwrap() hw.AudioSink { return s.AudioSink }

// Noise returns d of pink noise at rate (mono) at rmsDBFS (RMS relative to
// full scale), with 20 ms raised-cosine fades at both ends (no click):
// the built-in start-up sound. Pink noise (Paul Kellet's economy filter on
// a seeded Gaussian source) has equal energy per octave, as speech
// roughly does on average, so every band of the canceller's filter
// learns at once.
func Noise(d time.Duration, rate int, rmsDBFS float64, seed uint64) []int16 {
	n := int(d * time.Duration(rate) / time.Second)
	if n <= 0 || rate <= 0 {
		return nil
	}
	// xorshift64* and Box-Muller: deterministic, no global state.
	x := seed*0x9E3779B97F4A7C15 | 1
	next := func() float64 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		return (float64((x*0x2545F4914F6CDD1D)>>11) + 0.5) / (1 << 53)
	}
	raw := make([]float64, n)
	var b0, b1, b2, e float64
	for i := range raw {
		w := math.Sqrt(-2*math.Log(next())) * math.Cos(2*math.Pi*next())
		b0 = 0.99765*b0 + w*0.0990460
		b1 = 0.96300*b1 + w*0.2965164
		b2 = 0.57000*b2 + w*1.0526913
		raw[i] = b0 + b1 + b2 + w*0.1848
		e += raw[i] * raw[i]
	}
	amp := 32768 * math.Pow(10, rmsDBFS/20) / math.Sqrt(e/float64(n))
	fade := min(rate/50, n/2)
	out := make([]int16, n)
	for i, v := range raw {
		g := amp
		if k := min(i, n-1-i); k < fade {
			g *= 0.5 - 0.5*math.Cos(math.Pi*float64(k)/float64(fade))
		}
		out[i] = int16(max(-32768, min(32767, math.Round(v*g))))
	}
	return out
}

// DefaultDBFS and DefaultDuration are the built-in sound's level and
// length: about 6 dB under a voice at -20 dBFS active level, 4 s
// (docs/benchmarks.md "A start-up sound the canceller learns the room
// from").
const (
	DefaultDBFS     = -26.0
	DefaultDuration = 4 * time.Second
)
