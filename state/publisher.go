package state

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/device"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// Emitter is device.Emitter: the one control-lane interface state
// modules, the recogniser endpoint and the skills arbiter send through.
type Emitter = device.Emitter

// ErrUnavailable is device.ErrUnavailable: a module (or device) that does
// not exist on this host. Use errors.Is.
var ErrUnavailable = device.ErrUnavailable

// Deps is device.Deps, the dependencies every module constructor takes.
type Deps = device.Deps

// errLogEvery bounds how often a failing Emit is logged; every failure is
// counted.
const errLogEvery = 10 * time.Second

// Publisher turns (state_name, state_value) pairs into protocol.State events
// stamped with their capture time and hands them to the Emitter. Emit
// failures are counted (robot_agent_state_emit_errors_total) and logged at
// most once per 10 s with the number suppressed; they are never silent.
//
// A Publisher is safe for concurrent use.
type Publisher struct {
	module string
	emit   Emitter
	clk    clock.Clock
	log    *slog.Logger
	events *metrics.Counter
	errs   *metrics.Counter

	mu         sync.Mutex
	lastErrLog time.Duration
	logged     bool
	suppressed int
}

// NewPublisher returns the publisher for module.
func NewPublisher(module string, emit Emitter, deps Deps) *Publisher {
	deps = deps.WithDefaults()
	return &Publisher{
		module: module,
		emit:   emit,
		clk:    deps.Clock,
		log:    deps.Log.With("module", module),
		events: deps.Metrics.Counter("robot_agent_state_events_total", "State events handed to the uplink."),
		errs:   deps.Metrics.Counter("robot_agent_state_emit_errors_total", "State events the uplink refused (outbox full or closed)."),
	}
}

// Module returns the module name the publisher belongs to.
func (p *Publisher) Module() string { return p.module }

// Clock returns the shared clock; capture times are its Mono.
func (p *Publisher) Clock() clock.Clock { return p.clk }

// Publish emits one state event captured at capture (clock Mono). value
// must be valid JSON and is owned by the event afterwards: the caller must
// not modify it.
func (p *Publisher) Publish(name string, value json.RawMessage, capture time.Duration) error {
	m := &protocol.State{
		Meta:       protocol.Meta{Type: protocol.TypeState, TS: capture.Microseconds()},
		StateName:  name,
		StateValue: value,
	}
	return p.Emit(m)
}

// Emit hands any control message to the Emitter with the same error
// accounting as Publish (modules that raise other event types use it).
func (p *Publisher) Emit(m protocol.Message) error {
	err := p.emit.Emit(m)
	if err == nil {
		p.events.Inc()
		return nil
	}
	p.errs.Inc()
	now := p.clk.Mono()
	p.mu.Lock()
	if p.logged && now-p.lastErrLog < errLogEvery {
		p.suppressed++
		p.mu.Unlock()
		return err
	}
	n := p.suppressed
	p.logged, p.lastErrLog, p.suppressed = true, now, 0
	p.mu.Unlock()
	p.log.Warn("state: event not sent", "type", m.Envelope().Type, "err", err, "suppressed_since_last_log", n)
	return err
}
