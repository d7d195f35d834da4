package aec

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/hw"
)

// refRingLen is the far-end history kept: 4 s at 16 kHz.
const refRingLen = 1 << 16

// reanchor: when the device timestamps of a block and the running sample
// count disagree by more than this (the speaker paused, or was reopened),
// the timeline is re-anchored on the timestamp.
const reanchor = 40 * time.Millisecond

// Reference is the far-end reference signal: what the speaker played,
// resampled to 16 kHz and positioned on the agent clock at the time it
// reached the DAC. Played is called by one goroutine (the producer: the
// speaker's writer), Read by one other (the consumer: the capture pump). It
// is lock-free and does not allocate after construction.
type Reference struct {
	clk  clock.Clock
	rs   *resample.Resampler
	buf  []int16
	ring []int16
	// written is the next ring index to be written (published with a
	// release store after the samples), origin the clock.Mono time of
	// index 0 (nanoseconds), started whether origin is set (stored after
	// origin). Only the producer writes them; the consumer reads them.
	written atomic.Int64
	origin  atomic.Int64
	started atomic.Bool
	jumps   atomic.Int64
}

// NewReference returns a Reference for a speaker of the given rate (mono).
func NewReference(clk clock.Clock, speakerRate int) (*Reference, error) {
	rs, err := resample.New(speakerRate, Rate, resample.QualityDefault)
	if err != nil {
		return nil, fmt.Errorf("aec: reference: %w", err)
	}
	return &Reference{clk: clk, rs: rs, buf: make([]int16, rs.OutLen(speakerRate)), ring: make([]int16, refRingLen)}, nil
}

func (r *Reference) index(t time.Duration) int64 {
	return int64((t - time.Duration(r.origin.Load())) * Rate / time.Second)
}

// Played records p (mono, the speaker's rate; at most one second) whose
// first sample reached (or will reach) the DAC at clock.Mono time dac.
func (r *Reference) Played(p []int16, dac time.Duration) {
	if len(p) > r.rs.InRate() {
		p = p[:r.rs.InRate()]
	}
	w := r.written.Load()
	if !r.started.Load() {
		r.origin.Store(int64(dac))
		r.started.Store(true)
		w = 0
	} else if want := r.index(dac); want > w+int64(reanchor*Rate/time.Second) || want < w-int64(reanchor*Rate/time.Second) {
		// A pause (silence played by nobody) or a jump: zero the gap so a
		// reader sees silence there, then continue at the timestamp.
		r.jumps.Add(1)
		if want > w {
			for i := w; i < want && i < w+refRingLen; i++ {
				r.ring[i&(refRingLen-1)] = 0
			}
		}
		r.rs.Reset()
		w = max(want, w-int64(reanchor*Rate/time.Second)) // never rewrite much of the past
		if w < r.written.Load() {
			w = r.written.Load()
		}
	}
	n := r.rs.Process(r.buf, p)
	for _, v := range r.buf[:n] {
		r.ring[w&(refRingLen-1)] = v
		w++
	}
	r.written.Store(w)
}

// Jumps counts re-anchorings of the timeline (speaker pauses, reopen).
func (r *Reference) Jumps() int64 { return r.jumps.Load() }

// Read copies into dst the far-end samples that reached the DAC from clock
// time t on (zeros for what nobody played, or what is older than the ring).
func (r *Reference) Read(dst []int16, t time.Duration) {
	r.readAt(dst, r.index(t))
}

// ReadIndex is Read by ring index; Index converts a time.
func (r *Reference) readAt(dst []int16, idx int64) {
	w := r.written.Load()
	if !r.started.Load() && w == 0 {
		clear(dst)
		return
	}
	for i := range dst {
		j := idx + int64(i)
		if j < 0 || j >= w || j < w-refRingLen+Rate/10 {
			dst[i] = 0
			continue
		}
		dst[i] = r.ring[j&(refRingLen-1)]
	}
}

// Tap wraps the speaker: every block written is recorded in the Reference
// at the time the device reports it reaches the DAC (hw.LatencyReporter;
// 0 latency if the sink has none). Capabilities of the wrapped sink are
// reachable through Unwrap.
type Tap struct {
	hw.AudioSink
	ref  *Reference
	clk  clock.Clock
	lat  hw.LatencyReporter
	rate int
}

// NewTap returns a Tap writing to sink and recording into ref.
func NewTap(sink hw.AudioSink, ref *Reference, clk clock.Clock) *Tap {
	t := &Tap{AudioSink: sink, ref: ref, clk: clk, rate: sink.Format().SampleRate}
	t.lat, _ = findLatency(sink)
	return t
}

func findLatency(s hw.AudioSink) (hw.LatencyReporter, bool) {
	for range 8 {
		if l, ok := s.(hw.LatencyReporter); ok {
			return l, true
		}
		u, ok := s.(interface{ Unwrap() hw.AudioSink })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}

// Unwrap returns the wrapped sink.
func (t *Tap) Unwrap() hw.AudioSink { return t.AudioSink }

// Write implements hw.AudioSink (mono sinks; for stereo the first channel
// is the reference).
func (t *Tap) Write(p []int16) error {
	err := t.AudioSink.Write(p)
	if err != nil {
		return err
	}
	// After Write returns, its last sample reaches the DAC DeviceLatency
	// later, so the first one did that minus the block's duration.
	dac := t.clk.Mono() - time.Duration(len(p))*time.Second/time.Duration(t.rate)
	if t.lat != nil {
		dac += t.lat.DeviceLatency()
	}
	if t.AudioSink.Format().Channels == 1 {
		t.ref.Played(p, dac)
	}
	return nil
}
