package uplink

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
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
// original order. An error with a ref settles a message too (5.3). With a
// Spool (SetSpool) every message is on disk before Emit returns, stays there
// until settled, and is loaded again — with its original event id, ahead of
// new events — when the next process opens the spool.
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
	spool  Spool
	log    *slog.Logger

	mu      sync.Mutex
	seq     uint64
	pending []*pendingMsg
	cursor  int // index of the next message to send on this connection

	depth       *metrics.Gauge
	full        *metrics.Counter
	acked       *metrics.Counter
	resent      *metrics.Counter
	unknown     *metrics.Counter
	settled     *metrics.Counter
	spoolFailed *metrics.Counter
	restored    *metrics.Counter
}

type pendingMsg struct {
	id      string
	data    []byte
	sends   int
	durable bool // on the spool's disk (or no spool): may be sent
}

// NewOutbox returns an outbox that names events "<prefix>-<n>" and holds at
// most limit unacknowledged messages.
func NewOutbox(prefix string, limit int, clk clock.Clock, reg *metrics.Registry) *Outbox {
	if limit <= 0 {
		limit = 10000
	}
	return &Outbox{
		clk: clk, prefix: prefix, limit: limit, wake: func() {},
		depth:       reg.Gauge("robot_agent_control_outbox_depth", "Control messages waiting for an ack."),
		full:        reg.Counter("robot_agent_control_outbox_full_total", "Control messages refused because the outbox was full."),
		acked:       reg.Counter("robot_agent_control_acked_total", "Control messages acknowledged by the gateway."),
		resent:      reg.Counter("robot_agent_control_resent_total", "Control messages sent again after a reconnect."),
		unknown:     reg.Counter("robot_agent_control_unknown_acks_total", "Acks for event ids not in the outbox (duplicates or bogus)."),
		settled:     reg.Counter("robot_agent_control_rejected_total", "Control messages settled by a gateway error with their ref (never re-sent)."),
		spoolFailed: reg.Counter("robot_agent_control_not_durable_total", "Control messages the spool could not make durable (kept in memory and delivered)."),
		restored:    reg.Counter("robot_agent_control_restored_total", "Unsettled control messages loaded from the spool at start."),
		log:         slog.New(slog.DiscardHandler),
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
	p := &pendingMsg{id: env.EventID, data: data, durable: o.spool == nil}
	var ticket uint64
	if o.spool != nil {
		// Queued for the spool in id order under o.mu, made durable
		// below without it (group commit with concurrent emitters).
		var err error
		if ticket, err = o.spool.Append(env.EventID, data); err != nil {
			o.mu.Unlock()
			return "", fmt.Errorf("uplink: %s not queued: %w", env.EventID, err)
		}
	}
	o.pending = append(o.pending, p)
	o.depth.Set(int64(len(o.pending)))
	wake := o.wake
	spool := o.spool
	o.mu.Unlock()
	if spool != nil {
		if err := spool.Sync(ticket); err != nil {
			// Never a silent drop: the message stays queued in memory
			// and is delivered while this process lives.
			o.spoolFailed.Inc()
			o.log.Error("uplink: control event not durable; kept in memory only", "event", env.EventID, "err", err)
		}
		o.mu.Lock()
		p.durable = true
		o.mu.Unlock()
	}
	// Debug: a trace of every event id counted as raised (on disk when a
	// spool is set), which the fault-injection suite accounts against.
	o.log.Debug("uplink: control event raised", "event", env.EventID, "type", env.Type)
	wake()
	return env.EventID, nil
}

// Spool is the durable store behind the outbox (package spool implements
// it). Append queues a record in call order and returns a ticket; Sync
// waits until every record up to the ticket is durable; Settle records,
// lazily, that id needs no resend; Load calls f for every unsettled record
// in the order they were appended. All methods may be called from any
// goroutine.
type Spool interface {
	Append(id string, data []byte) (uint64, error)
	Sync(ticket uint64) error
	Settle(id string) error
	Load(f func(id string, data []byte)) error
}

// SetSpool makes the outbox durable: it loads the spool's unsettled
// messages ahead of anything new (they keep their event ids; ids of a
// previous boot keep that boot's prefix) and writes every new message to it
// before Emit returns. Call before the first Emit.
func (o *Outbox) SetSpool(s Spool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var restored []*pendingMsg
	err := s.Load(func(id string, data []byte) {
		restored = append(restored, &pendingMsg{id: id, data: data, durable: true})
		// Same prefix (no boot id): continue the counter past it.
		if rest, ok := strings.CutPrefix(id, o.prefix+"-"); ok {
			if n, err := strconv.ParseUint(rest, 10, 64); err == nil && n > o.seq {
				o.seq = n
			}
		}
	})
	if err != nil {
		return fmt.Errorf("uplink: load spool: %w", err)
	}
	o.pending = append(restored, o.pending...)
	o.spool = s
	o.restored.Add(int64(len(restored)))
	o.depth.Set(int64(len(o.pending)))
	if len(restored) > 0 {
		o.log.Info("uplink: control events restored from the spool", "count", len(restored), "first", restored[0].id)
	}
	return nil
}

func (o *Outbox) setLogger(l *slog.Logger) {
	o.mu.Lock()
	o.log = l
	o.mu.Unlock()
}

// next returns the next message to send on the current connection.
func (o *Outbox) next() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cursor >= len(o.pending) || !o.pending[o.cursor].durable {
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
	if o.remove(id) {
		o.acked.Inc()
		return true
	}
	o.unknown.Inc()
	return false
}

// Settle removes the message with event id id because the gateway answered
// it with an error (code): it will never be processed, so it is not re-sent
// (5.3). It reports whether it was pending.
func (o *Outbox) Settle(id, code string) bool {
	if o.remove(id) {
		o.settled.Inc()
		return true
	}
	return false
}

func (o *Outbox) remove(id string) bool {
	o.mu.Lock()
	for i, p := range o.pending {
		if p.id == id {
			copy(o.pending[i:], o.pending[i+1:])
			o.pending[len(o.pending)-1] = nil
			o.pending = o.pending[:len(o.pending)-1]
			if i < o.cursor {
				o.cursor--
			}
			o.depth.Set(int64(len(o.pending)))
			spool := o.spool
			o.mu.Unlock()
			if spool != nil {
				if err := spool.Settle(id); err != nil {
					o.log.Warn("uplink: spool settle failed; the event may be re-sent after a restart", "event", id, "err", err)
				}
			}
			return true
		}
	}
	o.mu.Unlock()
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
