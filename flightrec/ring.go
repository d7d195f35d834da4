// Package flightrec is the agent's flight recorder: it keeps the last
// seconds of microphone and TTS audio and the last control messages (both
// directions) in fixed, preallocated rings, and writes them on request as a
// support bundle (bundle.go), so "why did the robot say that" can be
// answered after the fact.
//
// Recording sits on the fast lane (the capture goroutine, the read pump)
// and must never block or allocate there. Every ring is split into slots,
// each with its own mutex that writers only ever TryLock: a writer that
// finds its slot held by a dump in progress skips the copy (the samples or
// message are counted as lost) instead of waiting. Dumps Lock one slot at a
// time for a memcpy. Uncontended, TryLock+Unlock is two atomic operations.
package flightrec

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
)

// chunkSamples is the audio ring's locking granularity (85 ms at 48 kHz).
const chunkSamples = 4096

type audioChunk struct {
	mu sync.Mutex
	s  []int16
}

// AudioRing keeps the most recent samples of one mono PCM16 stream.
//
// Write must be called from one goroutine at a time (the stream's producer);
// Snapshot, Rate, Written and Lost from any goroutine.
type AudioRing struct {
	rate   int
	cap    uint64
	chunks []audioChunk
	total  atomic.Uint64 // samples ever written
	lost   atomic.Uint64 // samples not kept because a dump held their chunk
	last   atomic.Int64  // wall time (unix ns) of the last Write
	now    func() time.Time
}

// NewAudioRing returns a ring keeping at least seconds of audio at rate Hz.
func NewAudioRing(rate int, seconds float64, clk clock.Clock) *AudioRing {
	n := max(1, int(float64(rate)*seconds+chunkSamples-1)/chunkSamples)
	r := &AudioRing{rate: rate, cap: uint64(n * chunkSamples), chunks: make([]audioChunk, n), now: clk.Now}
	for i := range r.chunks {
		r.chunks[i].s = make([]int16, chunkSamples)
	}
	return r
}

// Rate returns the sample rate in Hz.
func (r *AudioRing) Rate() int { return r.rate }

// Written returns how many samples were ever written.
func (r *AudioRing) Written() uint64 { return r.total.Load() }

// Lost returns how many samples were skipped because a dump was copying
// their chunk.
func (r *AudioRing) Lost() uint64 { return r.lost.Load() }

// LastWrite returns when Write was last called (zero if never).
func (r *AudioRing) LastWrite() time.Time {
	if ns := r.last.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Write appends p. It never blocks and never allocates.
func (r *AudioRing) Write(p []int16) {
	pos := r.total.Load()
	for len(p) > 0 {
		i := pos % r.cap
		c := &r.chunks[i/chunkSamples]
		off := int(i % chunkSamples)
		n := min(len(p), chunkSamples-off)
		if c.mu.TryLock() {
			copy(c.s[off:off+n], p[:n])
			c.mu.Unlock()
		} else {
			r.lost.Add(uint64(n))
		}
		p = p[n:]
		pos += uint64(n)
	}
	r.total.Store(pos)
	r.last.Store(r.now().UnixNano())
}

// Snapshot returns the kept audio, oldest first (at most the ring's
// capacity). Samples the producer overwrote while the copy ran are cut from
// the start, so the result is always one contiguous stretch of the stream.
// It allocates.
func (r *AudioRing) Snapshot() []int16 {
	end := r.total.Load()
	start := uint64(0)
	if end > r.cap {
		start = end - r.cap
	}
	out := make([]int16, end-start)
	for pos := start; pos < end; {
		i := pos % r.cap
		c := &r.chunks[i/chunkSamples]
		off := int(i % chunkSamples)
		n := min(int(end-pos), chunkSamples-off)
		c.mu.Lock()
		copy(out[pos-start:], c.s[off:off+n])
		c.mu.Unlock()
		pos += uint64(n)
	}
	if now := r.total.Load(); now > start+r.cap {
		cut := min(uint64(len(out)), now-r.cap-start)
		out = out[cut:]
	}
	return out
}

type ctlSlot struct {
	mu  sync.Mutex
	seq uint64 // 0: empty
	up  bool
	at  int64 // unix ns
	n   int   // original length
	buf []byte
}

// ControlRecord is one recorded control message.
type ControlRecord struct {
	Seq  uint64    // order of recording, from 1
	Time time.Time // when it was recorded
	Up   bool      // robot → gateway
	Len  int       // length on the wire
	Data []byte    // the message, cut at the ring's message limit
}

// Truncated reports whether Data is shorter than the message was.
func (c ControlRecord) Truncated() bool { return len(c.Data) < c.Len }

// ControlRing keeps the most recent control messages.
//
// Record may be called from any goroutine, concurrently (the read and the
// write pump both record); Snapshot from any goroutine.
type ControlRing struct {
	slots []ctlSlot
	next  atomic.Uint64
	lost  atomic.Uint64
	now   func() time.Time
}

// NewControlRing keeps the last n messages, each cut at maxBytes.
func NewControlRing(n, maxBytes int, clk clock.Clock) *ControlRing {
	r := &ControlRing{slots: make([]ctlSlot, max(1, n)), now: clk.Now}
	for i := range r.slots {
		r.slots[i].buf = make([]byte, 0, maxBytes)
	}
	return r
}

// Lost returns how many messages were skipped because their slot was being
// copied by a dump.
func (r *ControlRing) Lost() uint64 { return r.lost.Load() }

// Recorded returns how many messages were ever recorded (or lost).
func (r *ControlRing) Recorded() uint64 { return r.next.Load() }

// Record keeps a copy of msg. It never blocks and never allocates.
func (r *ControlRing) Record(up bool, msg []byte) {
	seq := r.next.Add(1)
	s := &r.slots[(seq-1)%uint64(len(r.slots))]
	if !s.mu.TryLock() {
		r.lost.Add(1)
		return
	}
	s.seq, s.up, s.at, s.n = seq, up, r.now().UnixNano(), len(msg)
	s.buf = append(s.buf[:0], msg[:min(len(msg), cap(s.buf))]...)
	s.mu.Unlock()
}

// Snapshot returns the kept messages, oldest first. It allocates.
func (r *ControlRing) Snapshot() []ControlRecord {
	out := make([]ControlRecord, 0, len(r.slots))
	for i := range r.slots {
		s := &r.slots[i]
		s.mu.Lock()
		if s.seq != 0 {
			out = append(out, ControlRecord{Seq: s.seq, Time: time.Unix(0, s.at), Up: s.up, Len: s.n, Data: append([]byte(nil), s.buf...)})
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
