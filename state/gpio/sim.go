package gpio

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"gopkg.in/yaml.v3"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
	"periph.io/x/conn/v3/physic"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/state"
)

// SimPin is a simulated pin: periph's gpiotest.Pin (so inputs go through
// periph's real In/Read/WaitForEdge code) that counts and optionally logs
// every write. Edges are fed with Edge or by a Scenario.
type SimPin struct {
	gpiotest.Pin
	writes atomic.Int64
	log    *slog.Logger // nil: silent
}

// NewSimPin returns a simulated pin called name with room for 64 pending
// edges. log, if not nil, gets a line on every write (the simulated LED).
func NewSimPin(name string, log *slog.Logger) *SimPin {
	p := &SimPin{log: log}
	p.N = name
	p.Clock = clockwork.NewRealClock()
	p.EdgesChan = make(chan gpio.Level, 64)
	return p
}

// Out implements gpio.PinOut and counts the write.
func (p *SimPin) Out(l gpio.Level) error {
	p.writes.Add(1)
	if p.log != nil {
		p.log.Info("sim gpio: output", "pin", p.N, "level", l.String())
	}
	return p.Pin.Out(l)
}

// PWM implements gpio.PinOut and counts the write.
func (p *SimPin) PWM(d gpio.Duty, f physic.Frequency) error {
	p.writes.Add(1)
	return p.Pin.PWM(d, f)
}

// Writes returns how many Out/PWM calls reached the pin.
func (p *SimPin) Writes() int64 { return p.writes.Load() }

// Level returns the pin's current level.
func (p *SimPin) Level() gpio.Level { return p.Pin.Read() }

// Edge queues level changes as if the line moved; the module's edge reader
// picks them up through WaitForEdge. It blocks if 64 edges are pending.
func (p *SimPin) Edge(levels ...gpio.Level) {
	for _, l := range levels {
		p.EdgesChan <- l
	}
}

// SimPins is a simulated board implementing hw.GPIO: any pin name asked for
// is created on first use. Outputs log their writes when the board has a
// logger, so a blinking simulated LED shows in the agent's log.
//
// SimPins is safe for concurrent use.
type SimPins struct {
	log  *slog.Logger
	mu   sync.Mutex
	pins map[string]*SimPin
}

// NewSimPins returns an empty simulated board; log may be nil.
func NewSimPins(log *slog.Logger) *SimPins {
	return &SimPins{log: log, pins: map[string]*SimPin{}}
}

// Pin implements hw.GPIO.
func (s *SimPins) Pin(name string) (gpio.PinIO, error) { return s.Get(name), nil }

// Get returns the simulated pin called name, creating it if needed.
func (s *SimPins) Get(name string) *SimPin {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pins[name]
	if p == nil {
		p = NewSimPin(name, s.log)
		s.pins[name] = p
	}
	return p
}

// Scenario scripts simulated input activity: at each step's time (from the
// start of the scenario, repeating every Loop if set) the named input is
// pressed or released, with Bounce extra toggles 1 ms apart before the line
// settles.
//
//	loop: 8s
//	steps:
//	  - {at: 2s, input: button_head, action: press, bounce: 3}
//	  - {at: 2.3s, input: button_head, action: release, bounce: 2}
type Scenario struct {
	Loop  time.Duration `yaml:"loop"`
	Steps []Step        `yaml:"steps"`
}

// Step is one scripted input change.
type Step struct {
	At     time.Duration `yaml:"at"`
	Input  string        `yaml:"input"`
	Action string        `yaml:"action"` // press, release, high or low
	Bounce int           `yaml:"bounce"` // 0..20
}

//go:embed testdata/buttons.yaml
var defaultScenario []byte

// DefaultScenario returns the embedded scenario the simulator uses: the
// head button pressed (with contact bounce) every few seconds.
func DefaultScenario() *Scenario {
	s, err := ParseScenario(defaultScenario)
	if err != nil {
		panic("gpio: embedded scenario is invalid: " + err.Error()) // build-time bug
	}
	return s
}

// ParseScenario decodes and validates a YAML scenario.
func ParseScenario(b []byte) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("gpio: scenario: %w", err)
	}
	if s.Loop < 0 {
		return nil, fmt.Errorf("gpio: scenario: loop is %v, want >= 0", s.Loop)
	}
	var last time.Duration
	for i, st := range s.Steps {
		switch {
		case st.At < last:
			return nil, fmt.Errorf("gpio: scenario: steps[%d].at %v is before the previous step (%v)", i, st.At, last)
		case s.Loop > 0 && st.At >= s.Loop:
			return nil, fmt.Errorf("gpio: scenario: steps[%d].at %v is not inside loop %v", i, st.At, s.Loop)
		case !state.ValidName(st.Input):
			return nil, fmt.Errorf("gpio: scenario: steps[%d].input is %q, want an input name", i, st.Input)
		case st.Action != "press" && st.Action != "release" && st.Action != "high" && st.Action != "low":
			return nil, fmt.Errorf("gpio: scenario: steps[%d].action is %q, want press, release, high or low", i, st.Action)
		case st.Bounce < 0 || st.Bounce > 20:
			return nil, fmt.Errorf("gpio: scenario: steps[%d].bounce is %d, want 0..20", i, st.Bounce)
		}
		last = st.At
	}
	if s.Loop > 0 && len(s.Steps) == 0 {
		return nil, fmt.Errorf("gpio: scenario: loop %v with no steps", s.Loop)
	}
	return &s, nil
}

// Play runs the scenario on clk against the simulated pins of cfg's inputs
// until ctx is done (or the steps end, without Loop). Steps naming an input
// that cfg does not have are skipped with a warning.
func (s *Scenario) Play(ctx context.Context, clk clock.Clock, cfg Config, pins *SimPins, log *slog.Logger) error {
	cfg = cfg.Defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sleepUntil := func(start, at time.Duration) bool {
		return clock.SleepContext(ctx, clk, at-(clk.Mono()-start))
	}
	warned := map[string]bool{}
	for {
		start := clk.Mono()
		for _, st := range s.Steps {
			if !sleepUntil(start, st.At) {
				return ctx.Err()
			}
			ic, ok := cfg.Inputs[st.Input]
			if !ok {
				if !warned[st.Input] {
					warned[st.Input] = true
					log.Warn("gpio: scenario input is not configured; skipping its steps", "input", st.Input)
				}
				continue
			}
			var final gpio.Level
			switch st.Action {
			case "press":
				final = gpio.Level(!*ic.ActiveLow)
			case "release":
				final = gpio.Level(*ic.ActiveLow)
			case "high":
				final = gpio.High
			default:
				final = gpio.Low
			}
			p := pins.Get(ic.Pin)
			for i := st.Bounce; i > 0; i-- {
				// Bounce ends on the final level: odd toggles away from it first.
				p.Edge(final == (i%2 == 0))
				if !sleepUntil(clk.Mono(), time.Millisecond) {
					return ctx.Err()
				}
			}
			p.Edge(final)
			log.Debug("gpio: scenario step", "input", st.Input, "action", st.Action, "bounce", st.Bounce)
		}
		if s.Loop <= 0 {
			return nil
		}
		if !sleepUntil(start, s.Loop) {
			return ctx.Err()
		}
	}
}
