package uplink

import (
	"sync/atomic"

	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// frameLane is a single-producer/single-consumer ring of preallocated
// encoded frames (header + payload). The producer (a capture pump) encodes
// straight into a slot; the consumer (the write pump) writes the slot's
// bytes to the WebSocket and releases it.
//
// # Policy when the link cannot keep up
//
// A full lane refuses the new frame (drop newest, counted): frames already
// queued are never evicted, because only the consumer may move head. For
// mic audio that is lossless up to the lane's capacity. For video it means
// the lane is not latest-wins by itself: the video pipeline reacts to a
// refusal by skipping to a key frame made from the newest picture, so
// what is queued (at most VideoQueue frames) goes out first and the newest
// picture wins from the next GOP on (docs/video.md).
//
// # Concurrency
//
// One producer goroutine calls push; one consumer goroutine (the write
// pump) calls peek/release. head and tail are the only shared state; a slot
// is published by the tail store (release) and reclaimed by the head store.
// No locks, no allocation.
type frameLane struct {
	slots   [][]byte // each cap = slotCap
	lens    []int
	mask    uint64
	head    atomic.Uint64 // next slot to read (consumer-owned)
	tail    atomic.Uint64 // next slot to write (producer-owned)
	dropped *metrics.Counter
	queued  *metrics.Counter
}

func newFrameLane(nslots, slotCap int, dropped, queued *metrics.Counter) *frameLane {
	n := 1
	for n < nslots {
		n <<= 1
	}
	l := &frameLane{slots: make([][]byte, n), lens: make([]int, n), mask: uint64(n - 1), dropped: dropped, queued: queued}
	buf := make([]byte, n*slotCap)
	for i := range l.slots {
		l.slots[i] = buf[i*slotCap : (i+1)*slotCap : (i+1)*slotCap]
	}
	return l
}

// pushPCM encodes a PCM16 frame into the next free slot. It returns false
// (and counts a drop) when the lane is full or the frame does not fit.
func (l *frameLane) pushPCM(h protocol.Header, samples []int16) bool {
	t := l.tail.Load()
	if t-l.head.Load() >= uint64(len(l.slots)) {
		l.dropped.Inc()
		return false
	}
	i := t & l.mask
	slot := l.slots[i]
	n := protocol.HeaderSize + 2*len(samples)
	if n > cap(slot) {
		l.dropped.Inc()
		return false
	}
	slot = slot[:n]
	h.Version = protocol.Version
	h.Length = uint32(2 * len(samples))
	protocol.PutHeader(slot, h)
	pcm.Int16ToBytes(slot[protocol.HeaderSize:], samples)
	l.lens[i] = n
	l.tail.Store(t + 1)
	l.queued.Inc()
	return true
}

// pushBytes copies an encoded payload with header h into the next slot.
func (l *frameLane) pushBytes(h protocol.Header, payload []byte) bool {
	t := l.tail.Load()
	if t-l.head.Load() >= uint64(len(l.slots)) {
		l.dropped.Inc()
		return false
	}
	i := t & l.mask
	n := protocol.HeaderSize + len(payload)
	if n > cap(l.slots[i]) {
		l.dropped.Inc()
		return false
	}
	slot := l.slots[i][:n]
	h.Version = protocol.Version
	h.Length = uint32(len(payload))
	protocol.PutHeader(slot, h)
	copy(slot[protocol.HeaderSize:], payload)
	l.lens[i] = n
	l.tail.Store(t + 1)
	l.queued.Inc()
	return true
}

// peek returns the oldest queued frame without removing it. The bytes stay
// valid until release.
func (l *frameLane) peek() ([]byte, bool) {
	h := l.head.Load()
	if h == l.tail.Load() {
		return nil, false
	}
	i := h & l.mask
	return l.slots[i][:l.lens[i]], true
}

// release frees the frame returned by peek.
func (l *frameLane) release() { l.head.Add(1) }

// depth returns the number of queued frames.
func (l *frameLane) depth() int { return int(l.tail.Load() - l.head.Load()) }
