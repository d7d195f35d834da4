package portaudio

import (
	"fmt"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/hw"
)

// Defaults of SinkConfig and SourceConfig.
const (
	DefaultSinkBufferMS   = 60
	DefaultSinkFadeMS     = 4
	DefaultSourceBufferMS = 1000
	maxBufferMS           = 2000
)

// SinkConfig configures a Sink.
type SinkConfig struct {
	DeviceConfig
	// Format is what Write accepts: mono PCM16 at any rate (default
	// hw.TTSFormat, 24 kHz mono).
	Format hw.AudioFormat
	// BufferMS is the audio kept queued between Write and the device
	// callback (default 60): it absorbs Go scheduling delays (see
	// docs/audio.md for the measurement behind the default). Flush drops
	// it at once, so it does not delay interrupts.
	BufferMS int
	// FadeMS is the callback's fade on underruns and flushes (default 4).
	FadeMS int
	// Quality of the rate conversion (default resample.QualityDefault).
	Quality resample.Quality
}

func (c *SinkConfig) defaults() error {
	if c.Format == (hw.AudioFormat{}) {
		c.Format = hw.TTSFormat
	}
	if c.BufferMS == 0 {
		c.BufferMS = DefaultSinkBufferMS
	}
	if c.FadeMS == 0 {
		c.FadeMS = DefaultSinkFadeMS
	}
	switch {
	case c.Format.Channels != 1 || c.Format.SampleRate < resample.MinRate || c.Format.SampleRate > resample.MaxRate:
		return fmt.Errorf("%w: portaudio: sink format %v: want mono at %d..%d Hz", ErrInvalidConfig, c.Format, resample.MinRate, resample.MaxRate)
	case c.BufferMS < 5 || c.BufferMS > maxBufferMS:
		return fmt.Errorf("%w: portaudio: sink buffer %d ms out of range 5..%d", ErrInvalidConfig, c.BufferMS, maxBufferMS)
	case c.FadeMS < 0 || c.FadeMS > 50:
		return fmt.Errorf("%w: portaudio: sink fade %d ms out of range 0..50", ErrInvalidConfig, c.FadeMS)
	}
	return c.DeviceConfig.validate("output")
}

// Sink is a PortAudio speaker: an hw.AudioSink taking mono PCM16 in
// Config.Format, converted to the device's rate and channel count.
//
// Write converts and appends to a lock-free ring in C memory and blocks
// (sleeping, never spinning) while more than BufferMS is queued; a C
// callback on PortAudio's thread plays from the ring without entering Go.
// While the device is missing, Write discards audio paced by the clock.
//
// Write is called by one goroutine; Flush, Latency, DeviceLatency, Close
// by any.
type Sink struct {
	ep     *endpoint
	cfg    SinkConfig
	period int // Go-side frames per device period

	// Write goroutine state.
	cur   *conn
	rs    *resample.Resampler
	gen   uint32
	mono  []int16 // resampled chunk at device rate
	dev   []int16 // interleaved chunk at device rate
	lead  int     // device frames
	timer clock.Timer
}

// sinkChunk is how many input samples Write converts at a time.
const sinkChunk = 480

// NewSink opens an output device on h. A device that is missing (or fails
// to open) does not make NewSink fail: the Sink starts degraded and picks
// the device up when it appears. Configuration errors and ambiguous device
// names do fail.
func (h *Host) NewSink(cfg SinkConfig) (*Sink, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg}
	// The ring holds the lead plus two periods of slack; the callback
	// starts each stream with the lead in silence.
	s.ep = newEndpoint(h, true, cfg.DeviceConfig, cfg.Format.SampleRate, cfg.BufferMS, cfg.FadeMS)
	s.period = max(1, cfg.Format.SampleRate*s.ep.cfg.PeriodMS/1000)
	s.timer = h.clk.NewTimer(time.Hour)
	s.timer.Stop()
	if err := h.register(s.ep); err != nil {
		return nil, err
	}
	return s, nil
}

// Format implements hw.AudioSink.
func (s *Sink) Format() hw.AudioFormat { return s.cfg.Format }

// PeriodFrames implements hw.Periodic: one device period at Format's rate.
func (s *Sink) PeriodFrames() int { return s.period }

// Latency is how long audio written now takes to reach the device's
// output: the queued buffer plus the device latency PortAudio reports (0
// while degraded). Any goroutine.
func (s *Sink) Latency() time.Duration {
	c := s.ep.conn.Load()
	if c == nil || !c.live.Load() {
		return 0
	}
	return time.Duration(s.cfg.BufferMS)*time.Millisecond + c.latency
}

// Up reports whether the device stream is running (false while degraded).
func (s *Sink) Up() bool {
	c := s.ep.conn.Load()
	return c != nil && c.live.Load()
}

// Device returns the name of the device in use ("" while degraded).
func (s *Sink) Device() string {
	s.ep.h.mu.Lock()
	defer s.ep.h.mu.Unlock()
	if s.ep.state != epRunning {
		return ""
	}
	return s.ep.dev.Name
}

// Flush implements hw.Flusher: it drops everything queued for the device,
// with a FadeMS fade-out of what is playing, at the next device callback.
// Call it right after interrupting the player (barge-in) so the queue does
// not delay silence. A Write running concurrently returns early without
// queuing the rest of its buffer; audio it already queued is dropped too
// (the ring tags publications with the flush generation). Writes that
// start after Flush returns play normally, from a reset resampler (no tail
// of the flushed audio); the first of them may wait up to one device
// period for the callback to release the flushed frames. It returns the frames (at
// Format's rate) that were queued and are discarded. Any goroutine;
// lock-free, no allocation.
func (s *Sink) Flush() int {
	if !s.ep.acquire() {
		return 0
	}
	defer s.ep.release()
	c := s.ep.conn.Load()
	if c == nil {
		return 0
	}
	queued := c.ring.buffered()
	c.ring.flush()
	return int(int64(queued) * int64(s.cfg.Format.SampleRate) / int64(c.rate))
}

// DeviceLatency implements hw.LatencyReporter: from now (the return of the
// last Write, when called right after it) until the last sample written
// reaches the DAC, measured against the device clock: the time since the
// last callback's start is subtracted from its device delay (PortAudio's
// outputBufferDacTime - currentTime), and the callback's buffer, the
// queue and the resampler's delay are added. Without time info from the
// host API it falls back to Latency. 0 while degraded. Any goroutine.
func (s *Sink) DeviceLatency() time.Duration {
	c := s.ep.conn.Load()
	if c == nil || !c.live.Load() {
		return 0
	}
	t, now, ok := c.ring.last()
	d := t.DeviceDelay(true)
	if !ok || d == 0 {
		return s.Latency()
	}
	frames := time.Duration(t.Frames+c.ring.buffered()) * time.Second / time.Duration(c.rate)
	return max(0, t.Start+d+frames-now+time.Duration(c.pendingNS.Load()))
}

// Close implements hw.AudioSink: a blocked Write returns hw.ErrClosed.
func (s *Sink) Close() error { return s.ep.close() }

// Write implements hw.AudioSink. It does not allocate except when the
// device (re)appears with a new format.
func (s *Sink) Write(p []int16) error {
	if !s.ep.acquire() {
		return errClosed
	}
	defer s.ep.release()
	if c := s.ep.conn.Load(); c != nil {
		// Audio handed to this Write is tagged with the flush generation
		// as of its start: a Flush during the call makes it stale.
		if g := c.ring.flushGen(); g != s.gen {
			s.gen = g
			// The resampler's history still holds the flushed audio: left
			// there, its last few frames (the filter's delay) would play at
			// the start of the next response.
			if s.rs != nil && c == s.cur {
				s.rs.Reset()
			}
		}
	}
	for len(p) > 0 {
		c := s.ep.conn.Load()
		if c == nil || !c.live.Load() {
			return s.pace(len(p))
		}
		if c != s.cur {
			if err := s.switchTo(c); err != nil {
				return err
			}
		}
		if c.ring.flushGen() != s.gen {
			return nil // flushed during this Write: drop the rest
		}
		n := min(len(p), sinkChunk)
		frames := s.convert(p[:n])
		if err := s.push(c, frames); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// switchTo adopts a newly opened stream, rebuilding converters if its
// format changed.
func (s *Sink) switchTo(c *conn) error {
	if s.cur == nil || s.cur.rate != c.rate || s.cur.ch != c.ch || s.rs == nil {
		// The endpoint only opens rates the resampler accepts.
		rs, err := resample.New(s.cfg.Format.SampleRate, c.rate, s.cfg.Quality)
		if err != nil {
			return fmt.Errorf("portaudio: output conversion: %w", err)
		}
		s.rs = rs
		s.mono = make([]int16, rs.OutLen(sinkChunk)+1)
		s.dev = make([]int16, len(s.mono)*c.ch)
	} else {
		s.rs.Reset()
	}
	s.lead = c.rate * s.cfg.BufferMS / 1000
	s.gen = c.ring.flushGen()
	s.cur = c
	c.pendingNS.Store(int64(s.rs.Delay() * float64(time.Second) / float64(c.rate)))
	return nil
}

// convert resamples and upmixes p into s.dev and returns the frame count.
func (s *Sink) convert(p []int16) int {
	n := s.rs.Process(s.mono, p)
	return resample.Upmix(s.dev, s.mono[:n], s.cur.ch) / s.cur.ch
}

// push appends frames of s.dev to the ring, waiting while the queue is at
// the lead. It gives up (dropping the rest) if the stream dies.
func (s *Sink) push(c *conn, frames int) error {
	ch := c.ch
	for off := 0; off < frames; {
		if !c.live.Load() || c.ring.flushGen() != s.gen {
			return nil
		}
		space := s.lead - c.ring.buffered()
		if space > 0 {
			k := c.ring.write(s.dev[off*ch:(off+min(space, frames-off))*ch], s.gen)
			off += k
			if k > 0 {
				continue
			}
		}
		// Sleep until about a period (or what is left) has been played.
		need := min(frames-off, c.period)
		deficit := need - max(space, 0)
		d := time.Duration(deficit) * time.Second / time.Duration(c.rate)
		if err := s.wait(min(max(d, time.Millisecond), 50*time.Millisecond)); err != nil {
			return err
		}
	}
	return nil
}

// pace stands in for a missing device: it sleeps for the duration of n
// samples and drops them.
func (s *Sink) pace(n int) error {
	return s.wait(time.Duration(n) * time.Second / time.Duration(s.cfg.Format.SampleRate))
}

func (s *Sink) wait(d time.Duration) error {
	s.timer.Reset(d)
	select {
	case <-s.timer.C():
		return nil
	case <-s.ep.closed:
		s.timer.Stop()
		return errClosed
	}
}
