package skills_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
	sgpio "github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/statetest"
)

type handlerLog struct {
	mu    sync.Mutex
	calls []protocol.FunctionCallInfo
	param []json.RawMessage
}

func (h *handlerLog) handle(_ context.Context, c protocol.FunctionCallInfo, p json.RawMessage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
	h.param = append(h.param, p)
	return nil
}

func (h *handlerLog) n() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.calls) }

func raise(t *testing.T, r *rig, value string) *protocol.FunctionCall {
	t.Helper()
	id, err := r.a.Raise(protocol.FunctionCallInfo{Source: "intent", Type: "wave", Value: value})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range statetest.Of[*protocol.FunctionCall](r.em) {
		if m.EventID == id {
			return m
		}
	}
	t.Fatalf("function_call %s not emitted", id)
	return nil
}

func TestDecisions(t *testing.T) {
	r := newRig(t, skillsConfig())
	h := &handlerLog{}
	r.a.RegisterDefault("wave", h.handle)
	r.clk.Advance(time.Second)

	fc := raise(t, r, "hello")
	if fc.TS != time.Second.Microseconds() || fc.FunctionCall.Policy != "arbitrate" || fc.FunctionCall.Source != "intent" {
		t.Fatalf("function_call %+v", fc)
	}
	r.a.HandleArbiter(context.Background(), &protocol.Arbiter{Ref: fc.EventID, Decision: protocol.DecisionDelegate, Param: json.RawMessage(`{"speed":2}`)})
	statetest.WaitUntil(t, "default handler on delegate", func() bool { return h.n() == 1 })
	if h.calls[0].Value != "hello" || string(h.param[0]) != `{"speed":2}` {
		t.Fatalf("handler got %+v %s", h.calls[0], h.param[0])
	}

	for _, d := range []string{protocol.DecisionOverride, protocol.DecisionIllegal} {
		fc := raise(t, r, d)
		r.a.HandleArbiter(context.Background(), &protocol.Arbiter{Ref: fc.EventID, Decision: d})
	}
	// A decision for nothing pending, and a repeated one.
	r.a.HandleArbiter(context.Background(), &protocol.Arbiter{Ref: "fc-nope", Decision: protocol.DecisionDelegate})
	r.a.HandleArbiter(context.Background(), &protocol.Arbiter{Ref: fc.EventID, Decision: protocol.DecisionDelegate})
	// Time passes well beyond the timeout: decided calls do not run later.
	r.pass(10 * time.Second)
	statetest.Settle(t, "default handler ran for override/illegal/unknown", func() bool { return h.n() == 1 })
	for name, want := range map[string]int64{
		"robot_agent_function_calls_total":             3,
		"robot_agent_function_calls_delegated_total":   1,
		"robot_agent_function_calls_overridden_total":  1,
		"robot_agent_function_calls_illegal_total":     1,
		"robot_agent_function_calls_unknown_ref_total": 2,
		"robot_agent_function_calls_timeouts_total":    0,
	} {
		if got := r.reg.Value(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if r.a.Pending() != 0 {
		t.Fatalf("%d pending", r.a.Pending())
	}
	if errs := r.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestUndecidedCallTimesOut(t *testing.T) {
	for _, tc := range []struct {
		onTimeout string
		runs      int
	}{{"delegate", 1}, {"drop", 0}} {
		t.Run(tc.onTimeout, func(t *testing.T) {
			cfg := skillsConfig()
			cfg.FunctionCalls = skills.FunctionCallConfig{Timeout: 2 * time.Second, OnTimeout: tc.onTimeout}
			r := newRig(t, cfg)
			h := &handlerLog{}
			r.a.RegisterDefault("wave", h.handle)
			raise(t, r, "x")
			r.pass(1900 * time.Millisecond)
			if h.n() != 0 || r.a.Pending() != 1 {
				t.Fatal("timed out early")
			}
			r.advanceUntil(t, time.Second, "timeout", func() bool { return r.a.Pending() == 0 })
			statetest.Settle(t, "handler runs", func() bool { return h.n() == tc.runs })
			if r.reg.Value("robot_agent_function_calls_timeouts_total") != 1 {
				t.Fatal("timeout not counted")
			}
		})
	}
}

func TestRaiseLimitsAndErrors(t *testing.T) {
	cfg := skillsConfig()
	cfg.FunctionCalls.MaxPending = 2
	r := newRig(t, cfg)
	if _, err := r.a.Raise(protocol.FunctionCallInfo{Source: "gpio"}); err == nil {
		t.Fatal("empty type accepted")
	}
	if _, err := r.a.Raise(protocol.FunctionCallInfo{Source: "gpio", Type: "t", Param: json.RawMessage("{")}); err == nil {
		t.Fatal("bad param accepted")
	}
	raise(t, r, "1")
	raise(t, r, "2")
	if _, err := r.a.Raise(protocol.FunctionCallInfo{Source: "s", Type: "wave"}); err == nil {
		t.Fatal("third pending call accepted")
	}
	// Uplink refuses the event: counted, and on_timeout (delegate) applies now.
	h := &handlerLog{}
	r.a.RegisterDefault("beep", h.handle)
	r.pass(5 * time.Second) // clear the pending calls
	r.em.SetFail(errFull)
	if _, err := r.a.Raise(protocol.FunctionCallInfo{Source: "s", Type: "beep"}); err == nil {
		t.Fatal("refused emit not reported")
	}
	statetest.WaitUntil(t, "local handling of an unsent call", func() bool { return h.n() == 1 })
	if r.reg.Value("robot_agent_skills_emit_errors_total") != 1 {
		t.Fatal("emit error not counted")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

const errFull = errString("uplink: outbox full")

// The whole robot-side path: a debounced button press raises a function
// call; on delegate the default handler blinks the LED through the arbiter;
// on override nothing runs.
func TestButtonPressToDefaultHandler(t *testing.T) {
	r := newRig(t, skillsConfig())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.g.SetRaiser(r.a)
	go func() {
		defer close(done)
		r.g.Run(ctx, state.NewPublisher("gpio", r.em, state.Deps{Clock: r.clk}))
	}()
	defer func() { cancel(); <-done }()
	r.a.RegisterDefault("button_press", func(ctx context.Context, c protocol.FunctionCallInfo, _ json.RawMessage) error {
		return r.a.Local(skills.SkillBlink, json.RawMessage(`{"pin":"led_eyes","times":1,"period_ms":200}`))
	})
	button := r.pins.Get("GPIO27")
	statetest.WaitUntil(t, "initial state", func() bool { return len(r.em.States("gpio.button_head")) == 1 })
	press := func() *protocol.FunctionCall {
		n := len(statetest.Of[*protocol.FunctionCall](r.em))
		want := r.reg.Value("robot_agent_gpio_edges_total") + 3
		button.Edge(gpio.Low, gpio.High, gpio.Low) // bouncy press
		statetest.WaitUntil(t, "edges", func() bool { return r.reg.Value("robot_agent_gpio_edges_total") == want })
		var fc *protocol.FunctionCall
		r.advanceUntil(t, time.Second, "function call", func() bool {
			all := statetest.Of[*protocol.FunctionCall](r.em)
			if len(all) > n {
				fc = all[n]
				return true
			}
			return false
		})
		want++
		button.Edge(gpio.High)
		statetest.WaitUntil(t, "release edge", func() bool { return r.reg.Value("robot_agent_gpio_edges_total") == want })
		r.pass(100 * time.Millisecond)
		return fc
	}
	fc := press()
	if fc.FunctionCall.Type != "button_press" || fc.FunctionCall.Value != "button_head" || fc.FunctionCall.Source != "gpio" {
		t.Fatalf("function_call %+v", fc.FunctionCall)
	}
	base := r.led().Writes()
	r.a.HandleArbiter(ctx, &protocol.Arbiter{Ref: fc.EventID, Decision: protocol.DecisionOverride})
	r.pass(time.Second)
	if r.led().Writes() != base {
		t.Fatal("override ran the default handler")
	}
	fc = press()
	r.a.HandleArbiter(ctx, &protocol.Arbiter{Ref: fc.EventID, Decision: protocol.DecisionDelegate})
	r.advanceUntil(t, time.Second, "blink on delegate", func() bool { return r.led().Writes() == base+2 })
	if r.led().Level() != gpio.Low {
		t.Fatal("led left on")
	}
	_ = sgpio.Name
}
