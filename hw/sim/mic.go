package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/room"
)

// DefaultNoiseDBFS is the RMS level of the simulated noise floor.
const DefaultNoiseDBFS = -60.0

// MicConfig selects what a simulated Mic plays. At most one of WAVPath and
// Script may be set; with neither the mic produces only the noise floor.
type MicConfig struct {
	// WAVPath is a WAV file (any rate, channel count and encoding codec/wav
	// reads; channels mixed and converted to 16 kHz mono with a linear
	// resampler when needed).
	WAVPath string
	// Script generates speech-like audio instead of a file.
	Script *SpeechScript
	// Loop repeats the file or script forever; otherwise it plays once and
	// the noise floor follows.
	Loop bool
	// Seed makes the generated speech and noise reproducible.
	Seed uint64
	// NoiseDBFS is the RMS level of the white noise floor, present under the
	// script and after the file ends. 0 means DefaultNoiseDBFS; -96 or less
	// means digital silence.
	NoiseDBFS float64
	// Record keeps every produced sample in memory for Sent.
	Record bool
	// Room, if set, adds its echo (of a Speaker sharing it) and noise to
	// what the mic captures.
	Room *room.Path
	// Latency is the simulated input latency: Read returns this long after
	// its last sample was captured, and DeviceLatency reports it.
	Latency time.Duration
}

// Mic is a simulated 16 kHz mono microphone. See the package documentation
// for pacing and concurrency.
type Mic struct {
	clk   clock.Clock
	pace  *clock.Pacer
	fill  func([]int16)
	noise func([]int16) // fills with the noise floor

	// Owned by the Read goroutine.
	started bool
	t0      time.Duration
	n       int64 // samples produced

	room    *room.Path
	latency time.Duration

	capturedEnd atomic.Int64 // CapturedEnd (ns)

	mu       sync.Mutex
	produced int64
	startAt  time.Duration
	begun    bool
	record   bool
	sent     []int16
}

// NewMic returns a Mic for cfg driven by clk. The stream starts (sample 0 is
// captured) at the clock time of the first Read.
func NewMic(cfg MicConfig, clk clock.Clock) (*Mic, error) {
	if clk == nil {
		return nil, errors.New("sim: NewMic: nil clock")
	}
	if cfg.WAVPath != "" && cfg.Script != nil {
		return nil, errors.New("sim: mic config sets both WAVPath and Script")
	}
	noiseDB := cfg.NoiseDBFS
	if noiseDB == 0 {
		noiseDB = DefaultNoiseDBFS
	}
	if noiseDB > 0 {
		return nil, fmt.Errorf("sim: mic noise level %v dBFS is above full scale", noiseDB)
	}
	sigma := 0.0
	if noiseDB > -96 {
		sigma = pcm.DBFSToRMS(noiseDB)
	}
	for i, u := range scriptUtterances(cfg.Script) {
		if u.Speech < 0 || u.Silence < 0 {
			return nil, fmt.Errorf("sim: script utterance %d has negative duration (speech %v, silence %v)", i, u.Speech, u.Silence)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	if cfg.Latency < 0 {
		return nil, fmt.Errorf("sim: mic latency %v must not be negative", cfg.Latency)
	}
	m := &Mic{clk: clk, pace: clock.NewPacer(clk), record: cfg.Record, room: cfg.Room, latency: cfg.Latency}
	m.noise = func(dst []int16) {
		for i := range dst {
			dst[i] = clamp16(sigma * rng.NormFloat64())
		}
	}
	switch {
	case cfg.WAVPath != "":
		a, err := wav.ReadFile(cfg.WAVPath)
		if err != nil {
			return nil, fmt.Errorf("sim: mic: %w", err)
		}
		m.fill = m.fileFiller(toMono16k(a), cfg.Loop)
	case cfg.Script != nil:
		m.fill = newSpeechGen(*cfg.Script, hw.MicFormat.SampleRate, cfg.Loop, rng, sigma).fill
	default:
		m.fill = m.noise
	}
	return m, nil
}

func scriptUtterances(s *SpeechScript) []Utterance {
	if s == nil {
		return nil
	}
	return s.Utterances
}

func (m *Mic) fileFiller(src []int16, loop bool) func([]int16) {
	pos := 0
	return func(dst []int16) {
		for len(dst) > 0 {
			if pos >= len(src) {
				if !loop || len(src) == 0 {
					m.noise(dst)
					return
				}
				pos = 0
			}
			n := copy(dst, src[pos:])
			pos += n
			dst = dst[n:]
		}
	}
}

// Format implements hw.AudioSource: always hw.MicFormat.
func (m *Mic) Format() hw.AudioFormat { return hw.MicFormat }

// Read implements hw.AudioSource. It returns when the last sample of dst
// has been "captured" on the clock: stream start + (samples so far +
// len(dst)) / 16 kHz. If the caller is late, Read returns at once, as a
// device with a deep buffer would.
func (m *Mic) Read(dst []int16) (int, error) {
	if m.pace.Closed() {
		return 0, hw.ErrClosed
	}
	if !m.started {
		m.started = true
		m.t0 = m.clk.Mono()
		m.mu.Lock()
		m.startAt, m.begun = m.t0, true
		m.mu.Unlock()
	}
	end := m.n + int64(len(dst))
	if err := m.pace.WaitUntil(m.t0 + durationOf(end, hw.MicFormat.SampleRate) + m.latency); err != nil {
		return 0, hw.ErrClosed
	}
	m.fill(dst)
	if m.room != nil {
		m.room.Capture(roomIndex(m.t0)+m.n, dst)
	}
	m.n = end
	m.capturedEnd.Store(int64(m.t0 + durationOf(end, hw.MicFormat.SampleRate)))
	m.mu.Lock()
	m.produced = end
	if m.record {
		m.sent = append(m.sent, dst...)
	}
	m.mu.Unlock()
	return len(dst), nil
}

// DeviceLatency implements hw.LatencyReporter: MicConfig.Latency.
func (m *Mic) DeviceLatency() time.Duration { return m.latency }

// CapturedEnd is when the sample after the last one Read returned was
// captured (clock.Mono time; see aec.Source). Unlike DeviceLatency it holds
// when the caller is late and Read returns audio captured a while ago.
// Any goroutine.
func (m *Mic) CapturedEnd() time.Duration { return time.Duration(m.capturedEnd.Load()) }

// Close implements hw.AudioSource: a blocked or later Read returns
// hw.ErrClosed. It is idempotent.
func (m *Mic) Close() error {
	m.pace.Close()
	return nil
}

// Produced returns how many samples Read has returned so far.
func (m *Mic) Produced() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.produced
}

// StartedAt returns the clock.Mono time at which sample 0 was captured (the
// first Read call) and whether reading has begun. Sample i was captured at
// StartedAt + i/16 kHz.
func (m *Mic) StartedAt() (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startAt, m.begun
}

// Sent returns a copy of every sample produced so far, or nil unless
// MicConfig.Record is set.
func (m *Mic) Sent() []int16 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.record {
		return nil
	}
	return append([]int16(nil), m.sent...)
}
