package gpio_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw/host"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/state"
	sgpio "github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/statetest"
)

type rig struct {
	clk  *clock.Fake
	reg  *metrics.Registry
	em   *statetest.Emitter
	pins *sgpio.SimPins
	mod  *sgpio.Module
	stop func()
}

func testConfig() sgpio.Config {
	return sgpio.Config{
		Enabled: true,
		Inputs: map[string]sgpio.InputConfig{
			"button_head": {Pin: "GPIO27", Debounce: 20 * time.Millisecond, FunctionCall: "button_press"},
			"bump_front":  {Pin: "GPIO22", Debounce: 10 * time.Millisecond},
		},
		Outputs: map[string]sgpio.OutputConfig{
			"led_eyes": {Pin: "GPIO17"},
			"motor_en": {Pin: "GPIO5", Safe: "high"},
		},
	}
}

func newRig(t *testing.T, raiser sgpio.Raiser) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(), reg: metrics.NewRegistry(), em: &statetest.Emitter{}, pins: sgpio.NewSimPins(nil)}
	deps := state.Deps{Clock: r.clk, Metrics: r.reg}
	mod, err := sgpio.New(testConfig(), r.pins, deps)
	if err != nil {
		t.Fatal(err)
	}
	if raiser != nil {
		mod.SetRaiser(raiser)
	}
	if err := mod.Open(); err != nil {
		t.Fatal(err)
	}
	r.mod = mod
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mod.Run(ctx, state.NewPublisher(sgpio.Name, r.em, deps))
	}()
	r.stop = func() { cancel(); <-done; _ = mod.Close() }
	t.Cleanup(r.stop)
	statetest.WaitUntil(t, "initial input states", func() bool { return len(r.em.States("")) == 2 })
	return r
}

func (r *rig) edges(t *testing.T, pin string, levels ...gpio.Level) {
	t.Helper()
	want := r.reg.Value("robot_agent_gpio_edges_total") + int64(len(levels))
	r.pins.Get(pin).Edge(levels...)
	statetest.WaitUntil(t, "edges processed", func() bool { return r.reg.Value("robot_agent_gpio_edges_total") == want })
}

func active(t *testing.T, s *protocol.State) bool {
	t.Helper()
	var v struct{ Active *bool }
	if err := json.Unmarshal(s.StateValue, &v); err != nil || v.Active == nil {
		t.Fatalf("state_value %s: %v", s.StateValue, err)
	}
	return *v.Active
}

func TestInitialStateIsPublished(t *testing.T) {
	r := newRig(t, nil)
	for _, n := range []string{"gpio.button_head", "gpio.bump_front"} {
		s := r.em.States(n)
		if len(s) != 1 || active(t, s[0]) {
			t.Fatalf("%s: got %v, want one inactive event (pull-up, active low)", n, s)
		}
	}
}

// A bouncing press gives exactly one event, stamped with the first edge,
// after the line has been quiet for the debounce time on the fake clock.
func TestBouncingPressGivesOneEvent(t *testing.T) {
	r := newRig(t, nil)
	r.em.Reset()
	r.clk.Advance(time.Second)
	pressAt := r.clk.Mono()
	// Contact bounce: low, high, low, high, low, 1 ms apart.
	r.edges(t, "GPIO27", gpio.Low)
	for _, l := range []gpio.Level{gpio.High, gpio.Low, gpio.High, gpio.Low} {
		r.clk.Advance(time.Millisecond)
		r.edges(t, "GPIO27", l)
	}
	r.clk.Advance(19 * time.Millisecond) // quiet for 19 ms < 20 ms debounce
	statetest.Settle(t, "event before the debounce time passed", func() bool { return len(r.em.States("gpio.button_head")) == 0 })
	r.clk.Advance(time.Millisecond)
	statetest.WaitUntil(t, "press event", func() bool { return len(r.em.States("gpio.button_head")) == 1 })
	s := r.em.States("gpio.button_head")[0]
	if !active(t, s) {
		t.Fatalf("press: %s, want active", s.StateValue)
	}
	if s.TS != pressAt.Microseconds() {
		t.Fatalf("ts = %d, want first edge at %d", s.TS, pressAt.Microseconds())
	}
	r.clk.Advance(time.Second)
	statetest.Settle(t, "extra events after the press settled", func() bool { return len(r.em.States("gpio.button_head")) == 1 })

	// Release with bounce: one inactive event.
	r.edges(t, "GPIO27", gpio.High, gpio.Low, gpio.High)
	r.clk.Advance(20 * time.Millisecond)
	statetest.WaitUntil(t, "release event", func() bool { return len(r.em.States("gpio.button_head")) == 2 })
	if active(t, r.em.States("gpio.button_head")[1]) {
		t.Fatal("release event is active")
	}
	if errs := r.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestGlitchShorterThanDebounceGivesNoEvent(t *testing.T) {
	r := newRig(t, nil)
	r.em.Reset()
	r.edges(t, "GPIO22", gpio.Low)
	r.clk.Advance(3 * time.Millisecond)
	r.edges(t, "GPIO22", gpio.High) // back to idle before 10 ms
	r.clk.Advance(50 * time.Millisecond)
	statetest.WaitUntil(t, "glitch counted", func() bool { return r.reg.Value("robot_agent_gpio_glitches_total") == 1 })
	if n := len(r.em.States("")); n != 0 {
		t.Fatalf("%d events for a glitch, want 0", n)
	}
}

// Change-driven inputs are lossless: every settled change is published, in
// order.
func TestEveryPressAndReleaseIsPublished(t *testing.T) {
	r := newRig(t, nil)
	r.em.Reset()
	for range 5 {
		r.edges(t, "GPIO22", gpio.Low)
		r.clk.Advance(10 * time.Millisecond)
		statetest.WaitUntil(t, "press", func() bool { n := len(r.em.States("")); return n%2 == 1 })
		r.edges(t, "GPIO22", gpio.High)
		r.clk.Advance(10 * time.Millisecond)
		statetest.WaitUntil(t, "release", func() bool { n := len(r.em.States("")); return n%2 == 0 })
	}
	ev := r.em.States("gpio.bump_front")
	if len(ev) != 10 {
		t.Fatalf("%d events, want 10", len(ev))
	}
	for i, s := range ev {
		if active(t, s) != (i%2 == 0) {
			t.Fatalf("event %d active=%v", i, !(i%2 == 0))
		}
	}
}

type fakeRaiser struct {
	mu    sync.Mutex
	calls []protocol.FunctionCallInfo
	err   error
}

func (f *fakeRaiser) Raise(info protocol.FunctionCallInfo) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, info)
	return "fc-1", f.err
}

func (f *fakeRaiser) n() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.calls) }

func TestPressRaisesFunctionCall(t *testing.T) {
	fr := &fakeRaiser{}
	r := newRig(t, fr)
	r.edges(t, "GPIO27", gpio.Low)
	r.clk.Advance(20 * time.Millisecond)
	statetest.WaitUntil(t, "raise", func() bool { return fr.n() == 1 })
	want := protocol.FunctionCallInfo{Source: "gpio", Type: "button_press", Value: "button_head"}
	if got := fr.calls[0]; got.Source != want.Source || got.Type != want.Type || got.Value != want.Value {
		t.Fatalf("raised %+v, want %+v", got, want)
	}
	// Release does not raise; bump_front has no function_call.
	r.edges(t, "GPIO27", gpio.High)
	r.clk.Advance(20 * time.Millisecond)
	r.edges(t, "GPIO22", gpio.Low)
	r.clk.Advance(20 * time.Millisecond)
	statetest.WaitUntil(t, "events", func() bool { return len(r.em.States("")) == 5 })
	if fr.n() != 1 {
		t.Fatalf("%d raises, want 1", fr.n())
	}
	// A failing raise is counted.
	fr.mu.Lock()
	fr.err = errors.New("too many pending")
	fr.mu.Unlock()
	r.edges(t, "GPIO27", gpio.Low)
	r.clk.Advance(20 * time.Millisecond)
	statetest.WaitUntil(t, "raise error counted", func() bool { return r.reg.Value("robot_agent_gpio_raise_errors_total") == 1 })
}

func TestOutputsSafeLevels(t *testing.T) {
	r := newRig(t, nil)
	led, mot := r.pins.Get("GPIO17"), r.pins.Get("GPIO5")
	if led.Level() != gpio.Low || mot.Level() != gpio.High {
		t.Fatalf("after Open: led %v motor %v, want safe Low/High", led.Level(), mot.Level())
	}
	o, err := r.mod.Output("motor_en")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Set(true); err != nil || mot.Level() != gpio.Low || !o.On() {
		t.Fatalf("on: err %v level %v", err, mot.Level())
	}
	if _, err := r.mod.Output("nope"); !errors.Is(err, sgpio.ErrUnknownOutput) {
		t.Fatalf("unknown output: %v", err)
	}
	r.stop()
	if mot.Level() != gpio.High {
		t.Fatal("Close left motor_en on")
	}
	if err := o.Set(true); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Set after Close: %v", err)
	}
	if _, err := r.mod.Output("led_eyes"); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Output after Close: %v", err)
	}
}

// On a host without GPIO (this build machine), periph's host.Init works but
// the pin does not exist: the module is unavailable and the Manager keeps
// the other modules and the agent running.
func TestHostWithoutGPIOIsUnavailable(t *testing.T) {
	hg := host.NewGPIO()
	if _, err := hg.Pin("GPIO17"); err == nil {
		t.Skip("this host has GPIO17")
	}
	if gpioreg.ByName("GPIO17") != nil {
		t.Skip("this host has GPIO17")
	}
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	em := &statetest.Emitter{}
	deps := state.Deps{Clock: clk, Metrics: reg}
	mod, err := sgpio.New(testConfig(), hg, deps)
	if err != nil {
		t.Fatal(err)
	}
	mgr := state.NewManager(em, deps)
	if err := mgr.Add(mod); err != nil {
		t.Fatal(err)
	}
	mgr.Start(context.Background())
	defer mgr.Stop()
	st := mgr.Status()
	if len(st) != 1 || st[0].Status != state.StatusUnavailable {
		t.Fatalf("status %+v, want unavailable", st)
	}
	s := em.States("module.gpio")
	if len(s) != 1 {
		t.Fatalf("module status events: %v", s)
	}
	if _, err := mod.Output("led_eyes"); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Output on unavailable module: %v", err)
	}
	if reg.Value("robot_agent_state_module_gpio_up") != 0 {
		t.Fatal("gpio up gauge set")
	}
}

func TestScenarioDrivesInputs(t *testing.T) {
	r := newRig(t, nil)
	r.em.Reset()
	sc, err := sgpio.ParseScenario([]byte("steps:\n  - {at: 10ms, input: bump_front, action: press, bounce: 4}\n  - {at: 100ms, input: bump_front, action: release}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r.clk.SetAutoAdvance(false)
	done := make(chan error, 1)
	go func() { done <- sc.Play(context.Background(), r.clk, testConfig(), r.pins, nil) }()
	// Drive the fake clock in 1 ms steps so timers fire in order.
	for i := 0; i < 300; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			i = 300
			continue
		default:
		}
		time.Sleep(200 * time.Microsecond)
		r.clk.Advance(time.Millisecond)
	}
	for range 50 { // let the debouncer see the final edges
		time.Sleep(time.Millisecond)
		r.clk.Advance(time.Millisecond)
	}
	statetest.WaitUntil(t, "press and release", func() bool { return len(r.em.States("gpio.bump_front")) == 2 })
	ev := r.em.States("gpio.bump_front")
	if !active(t, ev[0]) || active(t, ev[1]) {
		t.Fatalf("events %s %s", ev[0].StateValue, ev[1].StateValue)
	}
}

func TestParseScenarioErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"steps:\n  - {at: 1s, input: b, action: kick}\n", `action is "kick"`},
		{"steps:\n  - {at: 1s, input: B!, action: press}\n", `input is "B!"`},
		{"steps:\n  - {at: 2s, input: b, action: press}\n  - {at: 1s, input: b, action: release}\n", "before the previous step"},
		{"loop: 1s\nsteps:\n  - {at: 2s, input: b, action: press}\n", "not inside loop"},
		{"steps:\n  - {at: 1s, input: b, action: press, bounce: 99}\n", "bounce is 99"},
		{"stepz: []\n", "field stepz not found"},
		{"loop: 1s\n", "with no steps"},
	} {
		_, err := sgpio.ParseScenario([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
	if sc := sgpio.DefaultScenario(); len(sc.Steps) == 0 || sc.Loop == 0 {
		t.Fatal("default scenario is empty")
	}
}

func FuzzParseScenario(f *testing.F) {
	f.Add([]byte("loop: 6s\nsteps:\n  - {at: 2s, input: button_head, action: press, bounce: 3}\n"))
	f.Add([]byte("steps: [{at: -1s}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := sgpio.ParseScenario(b)
		if err == nil && s == nil {
			t.Fatal("nil scenario without error")
		}
	})
}
