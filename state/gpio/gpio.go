// Package gpio is the GPIO state module: debounced inputs (buttons, bump
// sensors) published as lossless state events, and the outputs (LEDs,
// enables) that skills drive through the safety arbiter.
//
// Pins come from hw.GPIO: periph.io's host drivers on a board, SimPins (on
// periph's gpiotest.Pin) in tests and simulation. Inputs are set up with
// edge detection on both edges; every edge restarts a debounce timer on the
// injected clock, and when the line has been quiet for the input's debounce
// time the level is read: if it differs from the last published one, a
// "gpio.<input>" event {"active":bool} is published with the capture time of
// the first edge of the burst. A bouncing press therefore gives one event,
// and a glitch shorter than the debounce gives none.
//
// Outputs are put in their safe level on Open and Close; the skills package
// returns them to it when the gateway link drops.
//
// # Concurrency
//
// Open, Run and Close are called by the state Manager, never concurrently.
// Run starts two goroutines per input (an edge reader blocked in periph's
// WaitForEdge, and a debouncer). Output and the Output methods may be called
// from any goroutine.
package gpio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/state"
)

// Name is the module name.
const Name = "gpio"

// edgePoll bounds how long an edge reader stays in WaitForEdge before it
// checks for shutdown (real time: periph's timeout is not on our clock).
const edgePoll = 100 * time.Millisecond

// Errors.
var (
	ErrUnknownOutput = errors.New("gpio: unknown output")
)

// Raiser raises a robot function call upstream (skills.Arbiter does).
type Raiser interface {
	Raise(info protocol.FunctionCallInfo) (eventID string, err error)
}

// Module is the GPIO state module. Create it with New.
type Module struct {
	cfg  Config
	pins hw.GPIO
	clk  clock.Clock
	log  *slog.Logger

	edges, glitches, raiseErrs *metrics.Counter

	mu      sync.Mutex
	raiser  Raiser
	inputs  []*input
	outputs map[string]*Output
}

type input struct {
	name      string
	cfg       InputConfig
	pin       gpio.PinIO
	activeLow bool
	edges     chan time.Duration
}

// New returns the module for cfg; it touches no hardware until Open.
func New(cfg Config, pins hw.GPIO, deps state.Deps) (*Module, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	r := deps.Metrics
	return &Module{
		cfg:       cfg.Defaults(),
		pins:      pins,
		clk:       deps.Clock,
		log:       deps.Log.With("module", Name),
		edges:     r.Counter("robot_agent_gpio_edges_total", "GPIO input edges seen by the debouncers."),
		glitches:  r.Counter("robot_agent_gpio_glitches_total", "GPIO edge bursts that settled back to the published level."),
		raiseErrs: r.Counter("robot_agent_gpio_raise_errors_total", "Function calls from GPIO inputs that could not be raised."),
	}, nil
}

// SetRaiser sets where inputs with a function_call raise it. Call it before
// the Manager starts the module.
func (m *Module) SetRaiser(r Raiser) {
	m.mu.Lock()
	m.raiser = r
	m.mu.Unlock()
}

// Name implements state.Module.
func (m *Module) Name() string { return Name }

// Open resolves every configured pin, sets outputs to their safe level and
// inputs to edge detection. A pin the host does not have makes the whole
// module unavailable (error wrapping state.ErrUnavailable).
func (m *Module) Open() error {
	if m.pins == nil {
		return fmt.Errorf("gpio: no GPIO on this host: %w", state.ErrUnavailable)
	}
	outputs := make(map[string]*Output, len(m.cfg.Outputs))
	for _, n := range state.SortedKeys(m.cfg.Outputs) {
		oc := m.cfg.Outputs[n]
		p, err := m.pins.Pin(oc.Pin)
		if err != nil {
			return m.pinErr("outputs", n, oc.Pin, err)
		}
		o := &Output{name: n, pin: p, safe: oc.Safe == "high"}
		if err := o.Safe(); err != nil {
			return fmt.Errorf("gpio: output %q pin %s: set safe level: %w", n, oc.Pin, err)
		}
		outputs[n] = o
	}
	var inputs []*input
	for _, n := range state.SortedKeys(m.cfg.Inputs) {
		ic := m.cfg.Inputs[n]
		p, err := m.pins.Pin(ic.Pin)
		if err != nil {
			return m.pinErr("inputs", n, ic.Pin, err)
		}
		pull := map[string]gpio.Pull{"up": gpio.PullUp, "down": gpio.PullDown, "none": gpio.Float}[ic.Pull]
		if err := p.In(pull, gpio.BothEdges); err != nil {
			return fmt.Errorf("gpio: input %q pin %s: set input with edge detection: %w", n, ic.Pin, err)
		}
		inputs = append(inputs, &input{name: n, cfg: ic, pin: p, activeLow: *ic.ActiveLow, edges: make(chan time.Duration, 64)})
	}
	m.mu.Lock()
	m.inputs, m.outputs = inputs, outputs
	m.mu.Unlock()
	return nil
}

func (m *Module) pinErr(kind, name, pin string, err error) error {
	if errors.Is(err, hw.ErrNoDevice) {
		return fmt.Errorf("gpio: %s.%s: pin %s: %v: %w", kind, name, pin, err, state.ErrUnavailable)
	}
	return fmt.Errorf("gpio: %s.%s: pin %s: %w", kind, name, pin, err)
}

// Run publishes debounced input changes until ctx is done. It first
// publishes every input's current level.
func (m *Module) Run(ctx context.Context, pub *state.Publisher) error {
	m.mu.Lock()
	inputs := m.inputs
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range inputs {
		wg.Add(2)
		go func() { defer wg.Done(); m.readEdges(ctx, in) }()
		go func() { defer wg.Done(); m.debounce(ctx, in, pub) }()
	}
	wg.Wait()
	return nil
}

// readEdges forwards each edge periph reports, stamped with the clock.
func (m *Module) readEdges(ctx context.Context, in *input) {
	for ctx.Err() == nil {
		if !in.pin.WaitForEdge(edgePoll) {
			continue
		}
		select {
		case in.edges <- m.clk.Mono():
		case <-ctx.Done():
			return
		}
	}
}

func (m *Module) active(in *input) bool {
	return (in.pin.Read() == gpio.High) != in.activeLow
}

func (m *Module) debounce(ctx context.Context, in *input, pub *state.Publisher) {
	name := "gpio." + in.name
	stable := m.active(in)
	_ = pub.Publish(name, encodeActive(stable), m.clk.Mono())
	t := m.clk.NewTimer(time.Hour)
	stopTimer(t)
	pending := false
	var burst time.Duration
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case at := <-in.edges:
			if !pending {
				pending, burst = true, at
			}
			stopTimer(t)
			t.Reset(in.cfg.Debounce)
			m.edges.Inc()
		case <-t.C():
			if !pending {
				continue
			}
			pending = false
			a := m.active(in)
			if a == stable {
				m.glitches.Inc()
				continue
			}
			stable = a
			_ = pub.Publish(name, encodeActive(a), burst)
			if a && in.cfg.FunctionCall != "" {
				m.raise(in)
			}
		}
	}
}

func (m *Module) raise(in *input) {
	m.mu.Lock()
	r := m.raiser
	m.mu.Unlock()
	if r == nil {
		return
	}
	if _, err := r.Raise(protocol.FunctionCallInfo{Source: "gpio", Type: in.cfg.FunctionCall, Value: in.name}); err != nil {
		m.raiseErrs.Inc()
		m.log.Warn("gpio: raise function call", "input", in.name, "type", in.cfg.FunctionCall, "err", err)
	}
}

// stopTimer stops t and drains a value it may already have delivered, so a
// following Reset cannot be confused by a stale fire.
func stopTimer(t clock.Timer) {
	t.Stop()
	select {
	case <-t.C():
	default:
	}
}

func encodeActive(a bool) json.RawMessage {
	if a {
		return json.RawMessage(`{"active":true}`)
	}
	return json.RawMessage(`{"active":false}`)
}

// Close puts every output in its safe level and makes them unusable.
func (m *Module) Close() error {
	m.mu.Lock()
	outs := m.outputs
	m.outputs, m.inputs = nil, nil
	m.mu.Unlock()
	var errs []error
	for _, n := range state.SortedKeys(outs) {
		o := outs[n]
		errs = append(errs, o.Safe())
		o.mu.Lock()
		o.closed = true
		o.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Outputs returns the names of the configured outputs.
func (m *Module) Outputs() []string { return state.SortedKeys(m.cfg.Outputs) }

// Output returns the named output. It fails with state.ErrUnavailable while
// the module is not open (no GPIO on this host) and ErrUnknownOutput for a
// name not in the configuration.
func (m *Module) Output(name string) (*Output, error) {
	if _, ok := m.cfg.Outputs[name]; !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownOutput, name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.outputs[name]
	if o == nil {
		return nil, fmt.Errorf("gpio: output %q: module not open: %w", name, state.ErrUnavailable)
	}
	return o, nil
}

// Output is one configured GPIO output. "On" is the level opposite to its
// safe level.
//
// Output is safe for concurrent use.
type Output struct {
	name   string
	pin    gpio.PinOut
	safe   bool // safe level is high
	mu     sync.Mutex
	on     bool
	closed bool
}

// Name returns the output's logical name.
func (o *Output) Name() string { return o.name }

// Set drives the output on (away from its safe level) or off.
func (o *Output) Set(on bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return fmt.Errorf("gpio: output %q is closed: %w", o.name, state.ErrUnavailable)
	}
	return o.set(on)
}

func (o *Output) set(on bool) error {
	if err := o.pin.Out(gpio.Level(on != o.safe)); err != nil {
		return fmt.Errorf("gpio: output %q: %w", o.name, err)
	}
	o.on = on
	return nil
}

// Safe returns the output to its safe level. It works after Close too.
func (o *Output) Safe() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.set(false)
}

// On reports whether the output was last driven on.
func (o *Output) On() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.on
}
