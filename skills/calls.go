package skills

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// Handler is the robot's default behaviour for a function call type, run
// when the gateway delegates the call back to the robot (or no decision
// came in time and on_timeout is delegate). param is the decision's param
// (nil on timeout). ctx is cancelled when the arbiter closes.
type Handler func(ctx context.Context, call protocol.FunctionCallInfo, param json.RawMessage) error

// Errors from Raise.
var (
	ErrTooManyPending = errors.New("skills: too many function calls waiting for a decision")
	ErrBadCall        = errors.New("skills: malformed function call")
)

type pending struct {
	info protocol.FunctionCallInfo
	done chan struct{}
}

type calls struct {
	a        *Arbiter
	prefix   string
	seq      atomic.Uint64
	mu       sync.Mutex
	pending  map[string]*pending
	handlers map[string]Handler

	raised, delegated, overridden, illegal, timeouts, unknownRef, noHandler, handlerErrs *metrics.Counter
}

func (c *calls) init(a *Arbiter) {
	var b [4]byte
	rand.Read(b[:])
	r := a.reg
	*c = calls{
		a:           a,
		prefix:      "fc-" + hex.EncodeToString(b[:]) + "-",
		pending:     map[string]*pending{},
		handlers:    map[string]Handler{},
		raised:      r.Counter("robot_agent_function_calls_total", "Function calls raised by the robot."),
		delegated:   r.Counter("robot_agent_function_calls_delegated_total", "Function calls the gateway delegated back (default handler run)."),
		overridden:  r.Counter("robot_agent_function_calls_overridden_total", "Function calls the application handled (override)."),
		illegal:     r.Counter("robot_agent_function_calls_illegal_total", "Function calls the gateway judged illegal."),
		timeouts:    r.Counter("robot_agent_function_calls_timeouts_total", "Function calls without a decision in time."),
		unknownRef:  r.Counter("robot_agent_function_calls_unknown_ref_total", "Arbiter decisions for no pending function call."),
		noHandler:   r.Counter("robot_agent_function_calls_no_handler_total", "Delegated function calls with no default handler."),
		handlerErrs: r.Counter("robot_agent_function_calls_handler_errors_total", "Default handlers that returned an error."),
	}
}

// RegisterDefault sets the robot's default handler for function calls of
// type typ.
func (a *Arbiter) RegisterDefault(typ string, h Handler) {
	a.calls.mu.Lock()
	a.calls.handlers[typ] = h
	a.calls.mu.Unlock()
}

// Raise sends a function call upstream (source, policy, type, value,
// param; an empty policy gets the configured one) and waits, without
// blocking the caller, for the gateway's decision: HandleArbiter then runs
// the default handler on delegate only. Without a decision within the
// configured timeout, on_timeout applies. It returns the call's event_id.
//
// If the uplink refuses the event, the on_timeout action applies at once
// and the error is returned.
func (a *Arbiter) Raise(info protocol.FunctionCallInfo) (string, error) {
	c := &a.calls
	switch {
	case info.Type == "":
		return "", fmt.Errorf("%w: type is empty", ErrBadCall)
	case info.Source == "":
		return "", fmt.Errorf("%w: source is empty", ErrBadCall)
	case len(info.Param) > 0 && !json.Valid(info.Param):
		return "", fmt.Errorf("%w: param is not valid JSON", ErrBadCall)
	}
	if info.Policy == "" {
		info.Policy = a.cfg.FunctionCalls.Policy
	}
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return "", fmt.Errorf("skills: raise %s: arbiter closed", info.Type)
	}
	p := &pending{info: info, done: make(chan struct{})}
	m := &protocol.FunctionCall{
		Meta:         protocol.Meta{Type: protocol.TypeFunctionCall, TS: a.clk.Mono().Microseconds()},
		FunctionCall: info,
	}
	// c.mu is held until the call is registered, so a decision cannot
	// arrive (HandleArbiter takes c.mu) for an id not yet pending.
	c.mu.Lock()
	if len(c.pending) >= a.cfg.FunctionCalls.MaxPending {
		c.mu.Unlock()
		return "", fmt.Errorf("%w (%d)", ErrTooManyPending, a.cfg.FunctionCalls.MaxPending)
	}
	c.raised.Inc()
	var id string
	var err error
	if ie, ok := a.emit.(IDEmitter); ok {
		// The uplink names it <boot_id>-<n>, on the same counter as
		// every other event (§3.3), so gateway de-duplication works.
		id, err = ie.EmitID(m)
	} else {
		id = c.prefix + itoa(c.seq.Add(1))
		m.EventID = id
		err = a.emit.Emit(m)
	}
	if err != nil {
		c.mu.Unlock()
		a.emitErrs.Inc()
		c.timedOut(id, p, "the uplink refused the function call")
		return id, fmt.Errorf("skills: function call %s not sent: %w", info.Type, err)
	}
	c.pending[id] = p
	c.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if !a.sleep(a.cfg.FunctionCalls.Timeout, p.done) {
			return // decided, or closing
		}
		if c.take(id) != nil {
			c.timedOut(id, p, "no decision within "+a.cfg.FunctionCalls.Timeout.String())
		}
	}()
	return id, nil
}

// take removes and returns the pending call id, or nil.
func (c *calls) take(id string) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[id]
	delete(c.pending, id)
	return p
}

func (c *calls) timedOut(id string, p *pending, why string) {
	c.timeouts.Inc()
	if c.a.cfg.FunctionCalls.OnTimeout == protocol.DecisionDelegate {
		c.a.log.Info("skills: function call undecided; running the default handler", "id", id, "type", p.info.Type, "why", why)
		c.runDefault(id, p.info, nil)
		return
	}
	c.a.log.Info("skills: function call undecided; dropped", "id", id, "type", p.info.Type, "why", why)
}

// HandleArbiter acts on the gateway's decision about a function call the
// robot raised: delegate runs the robot's default handler; override means
// the application handles it (logged, nothing runs); illegal is logged and
// counted. A decision for no pending call (unknown, or already timed out)
// is counted and ignored.
func (a *Arbiter) HandleArbiter(ctx context.Context, m *protocol.Arbiter) {
	c := &a.calls
	p := c.take(m.Ref)
	if p == nil {
		c.unknownRef.Inc()
		a.logOnce("unknown_ref", "skills: arbiter decision for no pending function call (unknown or timed out)", "ref", m.Ref, "decision", m.Decision)
		return
	}
	close(p.done)
	switch m.Decision {
	case protocol.DecisionDelegate:
		c.delegated.Inc()
		c.runDefault(m.Ref, p.info, m.Param)
	case protocol.DecisionOverride:
		c.overridden.Inc()
		// §7.4: the application acts instead of the robot; its param says
		// how, and is the only trace of that decision on the robot.
		a.log.Info("skills: function call handled by the application (override)", "ref", m.Ref, "type", p.info.Type, "value", p.info.Value, "param", paramString(m.Param))
		a.mu.Lock()
		a.lastOverride = Override{Ref: m.Ref, Call: p.info, Param: append(json.RawMessage(nil), m.Param...)}
		a.mu.Unlock()
	case protocol.DecisionIllegal:
		c.illegal.Inc()
		a.logOnce("illegal", "skills: gateway judged a function call illegal", "ref", m.Ref, "type", p.info.Type, "value", p.info.Value)
	default:
		c.illegal.Inc()
		a.logOnce("bad_decision", "skills: unknown arbiter decision; treated as illegal", "ref", m.Ref, "decision", m.Decision)
	}
}

func (c *calls) runDefault(id string, info protocol.FunctionCallInfo, param json.RawMessage) {
	c.mu.Lock()
	h := c.handlers[info.Type]
	c.mu.Unlock()
	if h == nil {
		c.noHandler.Inc()
		c.a.logOnce("no_handler:"+info.Type, "skills: no default handler for function call type", "type", info.Type, "id", id)
		return
	}
	a := c.a
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := h(a.ctx, info, param); err != nil {
			c.handlerErrs.Inc()
			a.log.Warn("skills: default handler failed", "type", info.Type, "id", id, "err", err)
		}
	}()
}

// Override is the last override decision the robot received.
type Override struct {
	Ref   string                    // the function call's event_id
	Call  protocol.FunctionCallInfo // the call
	Param json.RawMessage           // the decision's param (arb_param), as sent
}

// LastOverride returns the most recent override decision and whether there
// was one. Any goroutine.
func (a *Arbiter) LastOverride() (Override, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastOverride, a.lastOverride.Ref != ""
}

func paramString(p json.RawMessage) string {
	if len(p) == 0 {
		return "(none)"
	}
	if len(p) > 512 {
		return string(p[:512]) + "…"
	}
	return string(p)
}

// IDEmitter is an Emitter that assigns the event_id itself (the uplink's
// outbox: <boot_id>-<n> on the counter of every other event, §3.3).
type IDEmitter interface {
	EmitID(m protocol.Message) (string, error)
}

// Pending returns how many raised calls await a decision.
func (a *Arbiter) Pending() int {
	a.calls.mu.Lock()
	defer a.calls.mu.Unlock()
	return len(a.calls.pending)
}

func (a *Arbiter) logOnce(kind, msg string, args ...any) {
	a.mu.Lock()
	first := !a.logged[kind]
	a.logged[kind] = true
	a.mu.Unlock()
	if first {
		a.log.Warn(msg+" (repeats are only counted)", args...)
	} else {
		a.log.Debug(msg, args...)
	}
}
