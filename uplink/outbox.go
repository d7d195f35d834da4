package uplink

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// ErrOutboxFull is returned by Outbox.Emit when the control lane holds its
// limit of unacknowledged messages. The caller still owns the event and must
// count and report it; the outbox never drops a message it accepted.
var ErrOutboxFull = errors.New("uplink: control outbox full")

// Outbox is the control lane: an ordered, lossless queue of control
// messages that stay queued until the gateway acknowledges their event_id.
// After a reconnect every unacknowledged message is sent again, in the
// original order. (This implementation keeps them in memory; a durable spool
// can replace it behind the same methods.)
//
// # Concurrency
//
// Emit may be called from any goroutine. next, rewind and Ack are called by
// the uplink's pumps. All methods lock a mutex: the control lane is not on
// the audio hot path.
type Outbox struct {
	clk    clock.Clock
	prefix string
	limit  int
	wake   func()

	mu      sync.Mutex
	seq     uint64
	pending []*pendingMsg
	cursor  int // index of the next message to send on this connection

	depth   *metrics.Gauge
	full    *metrics.Counter
	acked   *metrics.Counter
	resent  *metrics.Counter
	unknown *metrics.Counter
}

type pendingMsg struct {
	id    string
	data  []byte
	sends int
}

// NewOutbox returns an outbox that names events "<prefix>-<n>" and holds at
// most limit unacknowledged messages.
func NewOutbox(prefix string, limit int, clk clock.Clock, reg *metrics.Registry) *Outbox {
	if limit <= 0 {
		limit = 10000
	}
	return &Outbox{
		clk: clk, prefix: prefix, limit: limit, wake: func() {},
		depth:   reg.Gauge("robot_agent_control_outbox_depth", "Control messages waiting for an ack."),
		full:    reg.Counter("robot_agent_control_outbox_full_total", "Control messages refused because the outbox was full."),
		acked:   reg.Counter("robot_agent_control_acked_total", "Control messages acknowledged by the gateway."),
		resent:  reg.Counter("robot_agent_control_resent_total", "Control messages sent again after a reconnect."),
		unknown: reg.Counter("robot_agent_control_unknown_acks_total", "Acks for event ids not in the outbox (duplicates or bogus)."),
	}
}

// Emit queues m, assigning an event_id if it has none and a ts (µs on the
// agent's monotonic clock) if it has none. It returns the event_id.
func (o *Outbox) Emit(m protocol.Message) error {
	_, err := o.EmitID(m)
	return err
}

// EmitID is Emit that also returns the assigned event_id.
func (o *Outbox) EmitID(m protocol.Message) (string, error) {
	env := m.Envelope()
	o.mu.Lock()
	if len(o.pending) >= o.limit {
		o.mu.Unlock()
		o.full.Inc()
		return "", fmt.Errorf("%w: %d messages unacknowledged", ErrOutboxFull, o.limit)
	}
	if env.EventID == "" {
		o.seq++
		env.EventID = o.prefix + "-" + strconv.FormatUint(o.seq, 10)
	}
	if env.TS == 0 {
		env.TS = o.clk.Mono().Microseconds()
	}
	data, err := protocol.Marshal(m)
	if err != nil {
		o.mu.Unlock()
		return "", fmt.Errorf("uplink: encode %s: %w", env.Type, err)
	}
	if len(data) > protocol.MaxControl {
		o.mu.Unlock()
		return "", fmt.Errorf("uplink: %s message of %d bytes exceeds the control limit of %d", env.Type, len(data), protocol.MaxControl)
	}
	o.pending = append(o.pending, &pendingMsg{id: env.EventID, data: data})
	o.depth.Set(int64(len(o.pending)))
	wake := o.wake
	o.mu.Unlock()
	wake()
	return env.EventID, nil
}

// next returns the next message to send on the current connection.
func (o *Outbox) next() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cursor >= len(o.pending) {
		return nil, false
	}
	p := o.pending[o.cursor]
	o.cursor++
	p.sends++
	if p.sends > 1 {
		o.resent.Inc()
	}
	return p.data, true
}

// rewind makes every unacknowledged message due again (new connection).
func (o *Outbox) rewind() {
	o.mu.Lock()
	o.cursor = 0
	o.mu.Unlock()
}

// Ack removes the message with event id id. It reports whether it was
// pending.
func (o *Outbox) Ack(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, p := range o.pending {
		if p.id == id {
			copy(o.pending[i:], o.pending[i+1:])
			o.pending[len(o.pending)-1] = nil
			o.pending = o.pending[:len(o.pending)-1]
			if i < o.cursor {
				o.cursor--
			}
			o.depth.Set(int64(len(o.pending)))
			o.acked.Inc()
			return true
		}
	}
	o.unknown.Inc()
	return false
}

// Len returns the number of unacknowledged messages.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}

// Unsent returns how many pending messages have not been written on the
// current connection yet.
func (o *Outbox) Unsent() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending) - o.cursor
}

func (o *Outbox) setWake(f func()) {
	o.mu.Lock()
	o.wake = f
	o.mu.Unlock()
}
