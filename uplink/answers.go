package uplink

import (
	"sync"
)

// answerQueue carries the robot's answers to reliable gateway messages
// (acks, and errors with a ref) from the read pump to the write pump. An
// answer is never dropped: it settles a gateway message, and a dropped one
// makes the gateway re-send (or, for a function-call decision, give up).
// The write pump sends answers before anything else.
//
// The queue is bounded by back-pressure instead of loss: when limit answers
// wait, the read pump stops reading until the write pump has caught up (the
// gateway's flood then waits in TCP), or the session ends. Answers belong to
// one session: end discards what the old connection could not send (a new
// session settles the gateway's pending messages anew, 3.5).
//
// # Concurrency
//
// push is called by the read pump, take by the write pump, begin and end by
// the session goroutine between pumps.
type answerQueue struct {
	limit int

	mu    sync.Mutex
	items [][]byte
	space chan struct{} // signalled when the write pump took items
	done  chan struct{} // closed when the session ends
}

func newAnswerQueue(limit int) *answerQueue {
	if limit <= 0 {
		limit = 16384
	}
	q := &answerQueue{limit: limit, space: make(chan struct{}, 1), done: make(chan struct{})}
	close(q.done)
	return q
}

// begin starts a session: the queue is empty and push may block again.
func (q *answerQueue) begin() {
	q.mu.Lock()
	q.items = q.items[:0]
	q.done = make(chan struct{})
	q.mu.Unlock()
}

// end releases a blocked push and discards unsent answers.
func (q *answerQueue) end() {
	q.mu.Lock()
	select {
	case <-q.done:
	default:
		close(q.done)
	}
	q.items = nil
	q.mu.Unlock()
}

// push queues data, waiting while the queue holds limit answers. It returns
// false only when the session ended (the answer is then moot).
func (q *answerQueue) push(data []byte, wake func()) bool {
	for {
		q.mu.Lock()
		done := q.done
		select {
		case <-done:
			q.mu.Unlock()
			return false
		default:
		}
		if len(q.items) < q.limit {
			q.items = append(q.items, data)
			q.mu.Unlock()
			wake()
			return true
		}
		q.mu.Unlock()
		wake()
		select {
		case <-q.space:
		case <-done:
			return false
		}
	}
}

// take moves every queued answer to dst (reused) and returns it.
func (q *answerQueue) take(dst [][]byte) [][]byte {
	q.mu.Lock()
	dst = append(dst[:0], q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.mu.Unlock()
	if len(dst) > 0 {
		select {
		case q.space <- struct{}{}:
		default:
		}
	}
	return dst
}

// len returns the number of queued answers.
func (q *answerQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
