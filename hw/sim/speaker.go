package sim

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/room"
)

// DefaultBlockLog is how many Blocks a Speaker remembers by default.
const DefaultBlockLog = 4096

// SpeakerConfig configures a simulated Speaker. The zero value is a 24 kHz
// mono speaker that records nothing but block timings.
type SpeakerConfig struct {
	// Format defaults to hw.TTSFormat. Channels must be 1 or 2.
	Format hw.AudioFormat
	// PeriodFrames is reported through hw.Periodic; 0 means 20 ms.
	PeriodFrames int
	// WAVPath, if set, receives everything written (created or truncated by
	// NewSpeaker, finalized and closed by Close).
	WAVPath string
	// Keep retains every written sample in memory for Samples. When false,
	// Write does not allocate.
	Keep bool
	// BlockLog is how many of the most recent Blocks are remembered (a ring
	// preallocated by NewSpeaker); 0 means DefaultBlockLog.
	BlockLog int
	// Room, if set, receives what plays (the first channel), positioned at
	// the time it plays plus Latency: the echo path to a Mic sharing it.
	Room *room.Path
	// Latency is the simulated output latency: a block written reaches the
	// room this long after it starts playing on the Speaker's clock, and
	// DeviceLatency reports it (0: none).
	Latency time.Duration
}

// Block is one Write as the Speaker played it.
type Block struct {
	At     time.Duration // clock.Mono when the block started playing
	Frames int           // frames played (fewer than Written after a Flush)
	// Written is how many frames Write was given (what Samples holds for
	// the block).
	Written int
}

// Speaker is a simulated speaker. It implements hw.Flusher (Flush cuts
// the block being played with a 4 ms fade). Write plays a block for its
// duration on the clock: a block starts when the previous one ends, or at the time of
// the Write call if the device ran dry (the call came more than one period
// after the previous block ended: an underrun, counted), and Write returns
// when the block ends. See the package documentation for concurrency.
type Speaker struct {
	clk    clock.Clock
	pace   *clock.Pacer
	format hw.AudioFormat
	period int

	// Owned by the Write goroutine.
	started bool
	base    time.Duration // start of the current run of back-to-back blocks
	frames  int64         // frames played since base

	mu        sync.Mutex
	closed    bool
	file      *os.File
	wav       *wav.Writer
	wavErr    error
	keep      bool
	samples   []int16
	blocks    []Block // ring
	nblocks   int     // total blocks ever written
	underruns int

	// The block being played (set by Write, cut by Flush).
	curAt     time.Duration // start
	curFrames int64
	curKeep   int           // index in samples of its first sample (Keep)
	curEnd    time.Duration // end, or fade end after a Flush
	cut       bool          // Flush cut the current block
	flushes   int

	room    *room.Path
	latency time.Duration
	mono    []int16 // first channel for the room (Write goroutine)
}

// NewSpeaker returns a Speaker for cfg driven by clk.
func NewSpeaker(cfg SpeakerConfig, clk clock.Clock) (*Speaker, error) {
	if clk == nil {
		return nil, errors.New("sim: NewSpeaker: nil clock")
	}
	f := cfg.Format
	if f == (hw.AudioFormat{}) {
		f = hw.TTSFormat
	}
	if f.SampleRate < wav.MinSampleRate || f.SampleRate > wav.MaxSampleRate || f.Channels < 1 || f.Channels > wav.MaxChannels {
		return nil, fmt.Errorf("sim: speaker format %v not supported (want %d..%d Hz, 1 or 2 channels)", f, wav.MinSampleRate, wav.MaxSampleRate)
	}
	if cfg.PeriodFrames < 0 || cfg.BlockLog < 0 {
		return nil, fmt.Errorf("sim: speaker period %d frames / block log %d must not be negative", cfg.PeriodFrames, cfg.BlockLog)
	}
	if cfg.Latency < 0 {
		return nil, fmt.Errorf("sim: speaker latency %v must not be negative", cfg.Latency)
	}
	s := &Speaker{clk: clk, pace: clock.NewPacer(clk), format: f, period: cfg.PeriodFrames, keep: cfg.Keep, room: cfg.Room, latency: cfg.Latency}
	if s.period == 0 {
		s.period = f.SampleRate / 50
	}
	n := cfg.BlockLog
	if n == 0 {
		n = DefaultBlockLog
	}
	s.blocks = make([]Block, n)
	if cfg.WAVPath != "" {
		file, err := os.Create(cfg.WAVPath)
		if err != nil {
			return nil, fmt.Errorf("sim: speaker: %w", err)
		}
		w, err := wav.NewWriter(file, f.SampleRate, f.Channels)
		if err != nil {
			file.Close()
			return nil, fmt.Errorf("sim: speaker: %w", err)
		}
		s.file, s.wav = file, w
	}
	return s, nil
}

// Format implements hw.AudioSink.
func (s *Speaker) Format() hw.AudioFormat { return s.format }

// PeriodFrames implements hw.Periodic.
func (s *Speaker) PeriodFrames() int { return s.period }

// Write implements hw.AudioSink. len(p) must be whole frames. The block is
// recorded (WAV, memory, Blocks) before Write waits for it to play, so a
// Close during the wait still leaves it recorded.
func (s *Speaker) Write(p []int16) error {
	if len(p)%s.format.Channels != 0 {
		return fmt.Errorf("sim: speaker write of %d samples is not whole %d-channel frames", len(p), s.format.Channels)
	}
	frames := int64(len(p) / s.format.Channels)
	underrun := false
	if now, dry := s.dry(); dry {
		underrun = s.started
		s.started, s.base, s.frames = true, now, 0
	}
	at := s.base + durationOf(s.frames, s.format.SampleRate)
	s.frames += frames

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return hw.ErrClosed
	}
	if underrun {
		s.underruns++
	}
	s.blocks[s.nblocks%len(s.blocks)] = Block{At: at, Frames: int(frames), Written: int(frames)}
	s.nblocks++
	s.curAt, s.curFrames, s.curKeep = at, frames, len(s.samples)
	s.curEnd, s.cut = s.base+durationOf(s.frames, s.format.SampleRate), false
	if s.keep {
		s.samples = append(s.samples, p...)
	}
	if s.wav != nil && s.wavErr == nil {
		s.wavErr = s.wav.Write(p)
	}
	s.mu.Unlock()

	if s.room != nil {
		mono := p
		if ch := s.format.Channels; ch > 1 {
			if cap(s.mono) < len(p)/ch {
				s.mono = make([]int16, len(p)/ch)
			}
			mono = s.mono[:len(p)/ch]
			for i := range mono {
				mono[i] = p[i*ch]
			}
		}
		s.room.Play(roomIndex(at+s.latency), mono, s.format.SampleRate)
	}

	// Wait for the block to play, in steps of at most flushStep so that a
	// Flush can end it early.
	for {
		s.mu.Lock()
		end, cut := s.curEnd, s.cut
		s.mu.Unlock()
		now := s.clk.Mono()
		if now >= end {
			if cut {
				// The next block follows the fade, not the discarded rest.
				s.base, s.frames = end, 0
			}
			return nil
		}
		if err := s.pace.WaitUntil(min(end, now+flushStep)); err != nil {
			return hw.ErrClosed
		}
	}
}

// flushStep bounds how late a Write notices a Flush.
const flushStep = time.Millisecond

// flushFadeFrames is the fade Flush applies (4 ms at 24 kHz; scaled).
func (s *Speaker) flushFadeFrames() int64 { return int64(s.format.SampleRate) * 4 / 1000 }

// Flush implements hw.Flusher: the block playing now is faded to zero over
// 4 ms from the current position and the rest of it is discarded (in the
// recorded samples too, with Keep; the WAV file keeps what was written);
// the Write playing it returns when the fade ends. It returns the number
// of frames discarded. Any goroutine; it never blocks on the device.
func (s *Speaker) Flush() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Mono()
	if s.closed || s.cut || now >= s.curEnd || now < s.curAt {
		return 0
	}
	ch := int64(s.format.Channels)
	pos := int64((now-s.curAt)*time.Duration(s.format.SampleRate)/time.Second) + 1
	fade := s.flushFadeFrames()
	if pos+fade >= s.curFrames {
		return 0 // ends within the fade anyway
	}
	if s.keep {
		blk := s.samples[s.curKeep : s.curKeep+int(s.curFrames*ch)]
		for f := pos; f < s.curFrames; f++ {
			g := max(0, fade-(f-pos)-1) // fade-1 .. 0, then 0
			for c := range ch {
				i := f*ch + c
				blk[i] = int16(int64(blk[i]) * g / fade)
			}
		}
	}
	s.cut = true
	s.curEnd = s.curAt + durationOf(pos+fade, s.format.SampleRate)
	s.flushes++
	if b := &s.blocks[(s.nblocks-1)%len(s.blocks)]; b.At == s.curAt {
		b.Frames = int(pos + fade)
	}
	return int(s.curFrames - pos - fade)
}

// Flushes returns how many Flush calls cut a block.
func (s *Speaker) Flushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}

// DeviceLatency implements hw.LatencyReporter: Write returns when its
// block has played, so the latency is SpeakerConfig.Latency.
func (s *Speaker) DeviceLatency() time.Duration { return s.latency }

// dry reports whether a block written now starts a new run (the first
// block, or the device ran dry: the call came more than one period after
// the previous block ended). A caller up to one period late is not an
// underrun: a real device holds at least a period of audio beyond what
// Write blocks for. Write goroutine.
func (s *Speaker) dry() (now time.Duration, dry bool) {
	now = s.clk.Mono()
	slack := durationOf(int64(s.period), s.format.SampleRate)
	return now, !s.started || now > s.base+durationOf(s.frames, s.format.SampleRate)+slack
}

// NextStart is when the first sample of a block handed to Write now
// reaches the room (clock.Mono time; see aec.Tap, which records the block
// in the echo canceller's reference before it plays): right after the
// previous block, or now plus the latency when the device ran dry. It
// follows the device timeline, not when the last Write returned (a Write
// that wakes up late on a loaded machine returns after its block has
// played). Write goroutine.
func (s *Speaker) NextStart() time.Duration {
	now, dry := s.dry()
	if dry {
		return now + s.latency
	}
	return s.base + durationOf(s.frames, s.format.SampleRate) + s.latency
}

// roomIndex converts a clock.Mono time to a 16 kHz sample index of the
// room's common timeline.
func roomIndex(t time.Duration) int64 {
	return int64(t/time.Second)*room.Rate + int64(t%time.Second)*room.Rate/int64(time.Second)
}

// Close implements hw.AudioSink: a blocked Write returns hw.ErrClosed, the
// WAV file is finalized and closed. It returns the first WAV error, if any.
// It is idempotent.
func (s *Speaker) Close() error {
	s.pace.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.wav == nil {
		return nil
	}
	err := s.wavErr
	if cerr := s.wav.Close(); err == nil {
		err = cerr
	}
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sim: speaker: recording %s: %w", s.file.Name(), err)
	}
	return nil
}

// Samples returns a copy of everything written, or nil unless
// SpeakerConfig.Keep is set.
func (s *Speaker) Samples() []int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keep {
		return nil
	}
	return append([]int16(nil), s.samples...)
}

// SamplesFrom returns a copy of the samples written from index i on (nil
// unless SpeakerConfig.Keep is set); with Samples' length it lets a long
// test read what was played incrementally.
func (s *Speaker) SamplesFrom(i int) []int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keep || i >= len(s.samples) {
		return nil
	}
	return append([]int16(nil), s.samples[max(i, 0):]...)
}

// Blocks returns the most recent blocks (up to SpeakerConfig.BlockLog),
// oldest first.
func (s *Speaker) Blocks() []Block {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(s.nblocks, len(s.blocks))
	out := make([]Block, 0, n)
	for i := s.nblocks - n; i < s.nblocks; i++ {
		out = append(out, s.blocks[i%len(s.blocks)])
	}
	return out
}

// Underruns returns how many times a Write found the speaker already idle
// (more than one period after the previous block finished playing), not
// counting the first Write.
func (s *Speaker) Underruns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.underruns
}
