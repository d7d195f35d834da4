package portaudio

import (
	"fmt"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/hw"
)

// SourceConfig configures a Source.
type SourceConfig struct {
	DeviceConfig
	// Format is what Read returns: mono PCM16 at any rate (default
	// hw.MicFormat, 16 kHz mono).
	Format hw.AudioFormat
	// BufferMS is the ring capacity between the device callback and Read
	// (default 1000): how late Read may be before input is dropped.
	BufferMS int
	// Quality of the rate conversion (default resample.QualityDefault).
	Quality resample.Quality
}

func (c *SourceConfig) defaults() error {
	if c.Format == (hw.AudioFormat{}) {
		c.Format = hw.MicFormat
	}
	if c.BufferMS == 0 {
		c.BufferMS = DefaultSourceBufferMS
	}
	switch {
	case c.Format.Channels != 1 || c.Format.SampleRate < resample.MinRate || c.Format.SampleRate > resample.MaxRate:
		return fmt.Errorf("%w: portaudio: source format %v: want mono at %d..%d Hz", ErrInvalidConfig, c.Format, resample.MinRate, resample.MaxRate)
	case c.BufferMS < 20 || c.BufferMS > 10*maxBufferMS:
		return fmt.Errorf("%w: portaudio: source buffer %d ms out of range 20..%d", ErrInvalidConfig, c.BufferMS, 10*maxBufferMS)
	}
	return c.DeviceConfig.validate("input")
}

// Source is a PortAudio microphone: an hw.AudioSource delivering mono
// PCM16 in Config.Format, captured at the device's rate and channel count
// and converted (downmix, band-limited resampling).
//
// A C callback on PortAudio's thread appends to a lock-free ring in C
// memory; Read drains it, sleeping (never spinning) until enough has been
// captured. While the device is missing, Read returns silence paced by the
// clock.
//
// Read is called by one goroutine; Latency, DeviceLatency, Close by any.
type Source struct {
	ep  *endpoint
	cfg SourceConfig

	// Read goroutine state.
	cur      *conn
	rs       *resample.Resampler
	dev      []int16 // interleaved chunk at device rate
	mono     []int16
	carry    []int16 // converted samples not yet returned
	carryOff int
	carryN   int
	timer    clock.Timer
	lost     bool // the last Read returned silence for a degraded device
}

// NewSource opens an input device on h. Like NewSink, a missing device
// starts the Source degraded rather than failing.
func (h *Host) NewSource(cfg SourceConfig) (*Source, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg}
	s.ep = newEndpoint(h, false, cfg.DeviceConfig, cfg.Format.SampleRate, cfg.BufferMS, 1)
	s.timer = h.clk.NewTimer(time.Hour)
	s.timer.Stop()
	if err := h.register(s.ep); err != nil {
		return nil, err
	}
	return s, nil
}

// Format implements hw.AudioSource.
func (s *Source) Format() hw.AudioFormat { return s.cfg.Format }

// Latency is the input latency PortAudio reports for the device (0 while
// degraded). Any goroutine.
func (s *Source) Latency() time.Duration {
	c := s.ep.conn.Load()
	if c == nil || !c.live.Load() {
		return 0
	}
	return c.latency
}

// DeviceLatency implements hw.LatencyReporter: from the ADC capturing the
// last sample Read returned until now (right after Read returns), against
// the device clock: the newest callback's ADC time (PortAudio's
// inputBufferAdcTime, as a delay before the callback's start), the frames
// captured after that sample still in the ring, and the converted samples
// Read holds back plus the resampler's delay. Without time info from the
// host API it falls back to Latency. 0 while degraded. Any goroutine.
func (s *Source) DeviceLatency() time.Duration {
	c := s.ep.conn.Load()
	if c == nil || !c.live.Load() {
		return 0
	}
	t, now, ok := c.ring.last()
	d := t.DeviceDelay(false)
	if !ok || d == 0 {
		return s.Latency()
	}
	// The newest captured frame was at the ADC at Start - d + Frames/rate;
	// the unread ring frames came after the last one Read took.
	newest := t.Start - d + time.Duration(t.Frames)*time.Second/time.Duration(c.rate)
	unread := time.Duration(c.ring.buffered()) * time.Second / time.Duration(c.rate)
	return max(0, now-newest+unread+time.Duration(c.pendingNS.Load()))
}

// Up reports whether the device stream is running (false while degraded).
func (s *Source) Up() bool {
	c := s.ep.conn.Load()
	return c != nil && c.live.Load()
}

// Lost reports whether the last Read returned silence in place of audio
// the device did not capture (degraded: missing at start, or lost and not
// yet reopened), in whole or in part (capture.LostReporter). Read
// goroutine, after Read.
func (s *Source) Lost() bool { return s.lost }

// Close implements hw.AudioSource: a blocked Read returns hw.ErrClosed.
func (s *Source) Close() error { return s.ep.close() }

// Read implements hw.AudioSource. It does not allocate except when the
// device (re)appears with a new format.
func (s *Source) Read(dst []int16) (int, error) {
	if !s.ep.acquire() {
		return 0, errClosed
	}
	defer s.ep.release()
	s.lost = false
	filled := 0
	for filled < len(dst) {
		if s.carryOff < s.carryN {
			n := copy(dst[filled:], s.carry[s.carryOff:s.carryN])
			s.carryOff += n
			filled += n
			continue
		}
		c := s.ep.conn.Load()
		if c == nil || !c.live.Load() {
			// Degraded: silence, paced by the clock.
			rest := len(dst) - filled
			if err := s.wait(time.Duration(rest) * time.Second / time.Duration(s.cfg.Format.SampleRate)); err != nil {
				return 0, err
			}
			clear(dst[filled:])
			s.lost = true
			return len(dst), nil
		}
		if c != s.cur {
			if err := s.switchTo(c); err != nil {
				return 0, err
			}
		}
		k := c.ring.read(s.dev)
		if k == 0 {
			// Sleep until what is missing has probably been captured.
			missing := (len(dst) - filled) * c.rate / s.cfg.Format.SampleRate
			d := time.Duration(min(missing, c.period)+1) * time.Second / time.Duration(c.rate)
			if err := s.wait(max(d, time.Millisecond)); err != nil {
				return 0, err
			}
			continue
		}
		m := resample.Downmix(s.mono, s.dev[:k*c.ch], c.ch)
		s.carryN = s.rs.Process(s.carry, s.mono[:m])
		s.carryOff = 0
	}
	if c := s.cur; c != nil {
		held := float64(s.carryN-s.carryOff) + s.rs.Delay()
		c.pendingNS.Store(int64(held * float64(time.Second) / float64(s.cfg.Format.SampleRate)))
	}
	return len(dst), nil
}

// switchTo adopts a newly opened stream: audio buffered before it is
// dropped and converters are rebuilt if the format changed.
func (s *Source) switchTo(c *conn) error {
	if s.cur == nil || s.cur.rate != c.rate || s.cur.ch != c.ch || s.rs == nil {
		// The endpoint only opens rates the resampler accepts.
		rs, err := resample.New(c.rate, s.cfg.Format.SampleRate, s.cfg.Quality)
		if err != nil {
			return fmt.Errorf("portaudio: input conversion: %w", err)
		}
		s.rs = rs
		s.dev = make([]int16, c.period*c.ch)
		s.mono = make([]int16, c.period)
		s.carry = make([]int16, rs.OutLen(c.period)+1)
	} else {
		s.rs.Reset()
	}
	s.carryOff, s.carryN = 0, 0
	c.ring.drop()
	s.cur = c
	return nil
}

func (s *Source) wait(d time.Duration) error {
	s.timer.Reset(d)
	select {
	case <-s.timer.C():
		return nil
	case <-s.ep.closed:
		s.timer.Stop()
		return errClosed
	}
}
