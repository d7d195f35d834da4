package playback

import (
	"fmt"
	"sync/atomic"
	"time"
)

// EventKind says how a response's playback ended.
type EventKind uint8

// Event kinds.
const (
	// EventDone: the response ended (EndResponse, or a newer response
	// started) and its last sample was handed to the device.
	EventDone EventKind = iota + 1
	// EventInterrupted: the response was cut by Interrupt (or ResetSession)
	// before all of it was played.
	EventInterrupted
)

func (k EventKind) String() string {
	switch k {
	case EventDone:
		return "done"
	case EventInterrupted:
		return "interrupted"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is a response's final playback report. Each response the consumer
// saw (at least one slot of it reached Fill) gets at most one Event.
type Event struct {
	Kind       EventKind
	ResponseID uint32
	// SamplesPlayed is how many of the response's samples were handed to
	// the device, including samples played under a fade-out.
	SamplesPlayed int64
	// SamplesLost is how many of the response's samples were dropped
	// because the buffer cap was reached (overflow). The player drops the
	// rest of a response once it overflows, so SamplesPlayed is then a
	// prefix of what the gateway sent; a response with SamplesLost > 0 was
	// not played whole even when Kind is EventDone.
	SamplesLost int64
	// At is the clock.Mono() time of the Fill call that ended the response.
	At time.Duration
}

// eventQueueSize bounds the completion events waiting for DrainEvents.
const eventQueueSize = 64

// eventQueue is a fixed single-producer (the Fill goroutine) single-consumer
// (the DrainEvents goroutine) queue with the same memory ordering as Ring:
// the element is written before tail.Store publishes it and read before
// head.Store frees it.
type eventQueue struct {
	buf  [eventQueueSize]Event
	_    cacheLinePad
	tail atomic.Uint64
	_    cacheLinePad
	head atomic.Uint64
}

// push appends e; it reports false (and drops e) when the queue is full.
// Producer only.
func (q *eventQueue) push(e Event) bool {
	t := q.tail.Load()
	if t-q.head.Load() == eventQueueSize {
		return false
	}
	q.buf[t%eventQueueSize] = e
	q.tail.Store(t + 1)
	return true
}

// drain calls fn for every queued event, oldest first. Consumer only.
func (q *eventQueue) drain(fn func(Event)) int {
	h := q.head.Load()
	t := q.tail.Load()
	for i := h; i != t; i++ {
		e := q.buf[i%eventQueueSize]
		q.head.Store(i + 1)
		fn(e)
	}
	return int(t - h)
}
