package skills_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
	sgpio "github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/statetest"
)

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type rig struct {
	clk  *clock.Fake
	reg  *metrics.Registry
	em   *statetest.Emitter
	pins *sgpio.SimPins
	g    *sgpio.Module
	a    *skills.Arbiter
	logs *syncBuf
	n    int
}

func gpioConfig() sgpio.Config {
	return sgpio.Config{
		Enabled: true,
		Inputs:  map[string]sgpio.InputConfig{"button_head": {Pin: "GPIO27", FunctionCall: "button_press"}},
		Outputs: map[string]sgpio.OutputConfig{
			"led_eyes": {Pin: "GPIO17"},
			"motor_en": {Pin: "GPIO5"}, // configured, but not allowed for skills
		},
	}
}

func skillsConfig() skills.Config {
	return skills.Config{Allow: []string{skills.SkillSet, skills.SkillBlink}, Pins: []string{"led_eyes"}}
}

func outputsOf(g *sgpio.Module) skills.Outputs {
	return skills.OutputsFunc(func(name string) (skills.Output, error) {
		o, err := g.Output(name)
		if err != nil {
			return nil, err
		}
		return o, nil
	})
}

func newRig(t *testing.T, cfg skills.Config) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(), reg: metrics.NewRegistry(), em: &statetest.Emitter{}, pins: sgpio.NewSimPins(nil), logs: &syncBuf{}}
	deps := state.Deps{Clock: r.clk, Metrics: r.reg, Log: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	g, err := sgpio.New(gpioConfig(), r.pins, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Open(); err != nil {
		t.Fatal(err)
	}
	r.g = g
	a, err := skills.New(cfg, outputsOf(g), r.em, deps)
	if err != nil {
		t.Fatal(err)
	}
	r.a = a
	t.Cleanup(func() { a.Close(); g.Close() })
	a.SetLinkUp(true)
	return r
}

func (r *rig) led() *sgpio.SimPin { return r.pins.Get("GPIO17") }

func (r *rig) skill(name, args string) string {
	r.n++
	id := "s-" + strings.Repeat("x", r.n%3) + string(rune('a'+r.n%26)) + itoa(r.n)
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	r.a.HandleSkill(context.Background(), &protocol.Skill{Meta: protocol.Meta{Type: protocol.TypeSkill, EventID: id}, Skill: name, Args: raw})
	return id
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func (r *rig) resultFor(t *testing.T, ref string) *protocol.SkillResult {
	t.Helper()
	var out *protocol.SkillResult
	statetest.WaitUntil(t, "skill_result for "+ref, func() bool {
		n := 0
		for _, m := range statetest.Of[*protocol.SkillResult](r.em) {
			if m.Ref == ref {
				out = m
				n++
			}
		}
		if n > 1 {
			t.Fatalf("%d results for %s, want exactly one", n, ref)
		}
		return n == 1
	})
	return out
}

func TestSetDrivesOutput(t *testing.T) {
	r := newRig(t, skillsConfig())
	base := r.led().Writes()
	ref := r.skill(skills.SkillSet, `{"pin":"led_eyes","on":true}`)
	res := r.resultFor(t, ref)
	if !res.OK || res.Error != nil || string(res.Result) != `{"on":true,"pin":"led_eyes"}` {
		t.Fatalf("result %+v %s", res, res.Result)
	}
	if r.led().Level() != gpio.High || r.led().Writes() != base+1 {
		t.Fatalf("led level %v writes %d", r.led().Level(), r.led().Writes()-base)
	}
	if res.TS == 0 && r.clk.Mono() != 0 {
		t.Fatal("no ts")
	}
	r.resultFor(t, r.skill(skills.SkillSet, `{"pin":"led_eyes","on":false}`))
	if r.led().Level() != gpio.Low {
		t.Fatal("led still on")
	}
	if errs := r.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

// Bad input of every kind: one structured error back each, counted, logged
// once per kind, and not a single write reaches the pins.
func TestBadInputNeverTouchesHardware(t *testing.T) {
	cfg := skillsConfig()
	cfg.RatePerSec, cfg.Burst = 1000, 1000 // floods are tested separately
	r := newRig(t, cfg)
	led, motor := r.led(), r.pins.Get("GPIO5")
	baseLED, baseMotor := led.Writes(), motor.Writes()
	cases := []struct {
		skill, args, code, want string
	}{
		{"self_destruct", `{}`, protocol.CodeUnknownSkill, `skill "self_destruct" is not on the robot's allowlist`},
		{"gpio.pwm", `{"pin":"led_eyes"}`, protocol.CodeUnknownSkill, "not on the robot's allowlist"},
		{skills.SkillSet, `{"pin":"motor_en","on":true}`, protocol.CodeBadArgument, `field "pin" is "motor_en", which is not an output skills may drive`},
		{skills.SkillSet, `{"pin":"GPIO17","on":true}`, protocol.CodeBadArgument, `field "pin" is "GPIO17"`},
		{skills.SkillSet, `{"pin":17,"on":true}`, protocol.CodeBadArgument, `field "pin": JSON number is not a valid string`},
		{skills.SkillSet, `{"pin":"led_eyes","on":"yes"}`, protocol.CodeBadArgument, `field "on": JSON string is not a valid bool`},
		{skills.SkillSet, `{"pin":"led_eyes"}`, protocol.CodeBadArgument, `field "on" is missing`},
		{skills.SkillSet, `{"on":true}`, protocol.CodeBadArgument, `field "pin" is missing`},
		{skills.SkillSet, `{"pin":"led_eyes","on":true,"volts":12}`, protocol.CodeBadArgument, `unknown field "volts"`},
		{skills.SkillSet, ``, protocol.CodeBadArgument, `field "args" is missing`},
		{skills.SkillSet, `[1,2]`, protocol.CodeBadArgument, `field "args" must be a JSON object`},
		{skills.SkillBlink, `{"pin":"led_eyes","times":0,"period_ms":200}`, protocol.CodeBadArgument, `field "times" is 0, want 1..20`},
		{skills.SkillBlink, `{"pin":"led_eyes","times":500,"period_ms":200}`, protocol.CodeBadArgument, `field "times" is 500, want 1..20`},
		{skills.SkillBlink, `{"pin":"led_eyes","times":2.5,"period_ms":200}`, protocol.CodeBadArgument, `field "times": JSON number 2.5 is not a valid int`},
		{skills.SkillBlink, `{"pin":"led_eyes","times":2,"period_ms":5}`, protocol.CodeBadArgument, `field "period_ms" is 5, want 100..5000`},
		{skills.SkillBlink, `{"pin":"led_eyes","times":2}`, protocol.CodeBadArgument, `field "period_ms" is missing`},
	}
	for _, tc := range cases {
		ref := r.skill(tc.skill, tc.args)
		res := r.resultFor(t, ref)
		if res.OK || res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Msg, tc.want) {
			t.Errorf("%s %s: result %+v, want %s %q", tc.skill, tc.args, res.Error, tc.code, tc.want)
		}
	}
	if led.Writes() != baseLED || motor.Writes() != baseMotor {
		t.Fatalf("bad input wrote to pins: led +%d motor +%d", led.Writes()-baseLED, motor.Writes()-baseMotor)
	}
	if n := r.reg.Value("robot_agent_skills_rejected_bad_argument_total"); n != 14 {
		t.Errorf("bad_argument counted %d, want 14", n)
	}
	if n := r.reg.Value("robot_agent_skills_rejected_unknown_skill_total"); n != 2 {
		t.Errorf("unknown_skill counted %d", n)
	}
	if n := strings.Count(r.logs.String(), "skill refused (further"); n != 2 {
		t.Errorf("logged %d refusals at warn level, want once per kind (2):\n%s", n, r.logs)
	}
	if errs := r.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestFloodIsRateLimited(t *testing.T) {
	r := newRig(t, skillsConfig()) // 5/s, burst 5
	base := r.led().Writes()
	ok, limited := 0, 0
	for i := range 50 {
		res := r.resultFor(t, r.skill(skills.SkillSet, `{"pin":"led_eyes","on":`+map[bool]string{true: "true", false: "false"}[i%2 == 0]+`}`))
		switch {
		case res.OK:
			ok++
		case res.Error.Code == protocol.CodeRateLimited:
			limited++
		default:
			t.Fatalf("unexpected %+v", res.Error)
		}
	}
	if ok != 5 || limited != 45 {
		t.Fatalf("ok %d limited %d, want 5 / 45", ok, limited)
	}
	if w := r.led().Writes() - base; w != 5 {
		t.Fatalf("%d writes reached the pin, want 5", w)
	}
	r.clk.Advance(time.Second) // 5 tokens back
	if !r.resultFor(t, r.skill(skills.SkillSet, `{"pin":"led_eyes","on":true}`)).OK {
		t.Fatal("not refilled")
	}
}

// advanceUntil moves the fake clock in 10 ms steps until cond holds.
func (r *rig) advanceUntil(t *testing.T, max time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := r.clk.Mono()
	for !cond() {
		if r.clk.Mono()-start >= max {
			t.Fatalf("%s: not within %v on the fake clock", what, max)
		}
		time.Sleep(500 * time.Microsecond)
		r.clk.Advance(10 * time.Millisecond)
	}
	return r.clk.Mono() - start
}

// pass moves the fake clock forward by d in 100 ms steps, letting timers
// fire in order.
func (r *rig) pass(d time.Duration) {
	for end := r.clk.Mono() + d; r.clk.Mono() < end; {
		time.Sleep(100 * time.Microsecond)
		r.clk.Advance(100 * time.Millisecond)
	}
}

func TestBlink(t *testing.T) {
	r := newRig(t, skillsConfig())
	base := r.led().Writes()
	ref := r.skill(skills.SkillBlink, `{"pin":"led_eyes","times":3,"period_ms":200}`)
	var res *protocol.SkillResult
	took := r.advanceUntil(t, 2*time.Second, "blink result", func() bool {
		for _, m := range statetest.Of[*protocol.SkillResult](r.em) {
			if m.Ref == ref {
				res = m
				return true
			}
		}
		return false
	})
	if !res.OK || string(res.Result) != `{"pin":"led_eyes","times":3}` {
		t.Fatalf("result %+v", res)
	}
	if took < 600*time.Millisecond || took > 750*time.Millisecond {
		t.Fatalf("3 blinks of 200 ms took %v", took)
	}
	if w := r.led().Writes() - base; w != 6 || r.led().Level() != gpio.Low {
		t.Fatalf("%d writes, level %v; want 6 and off", w, r.led().Level())
	}
}

// Dead-man: the link drops while the LED blinks (currently on) → the LED is
// in its safe state within 500 ms on the fake clock, the blink reports it
// was stopped, and nothing re-energises it on reconnect.
func TestDeadmanDuringBlink(t *testing.T) {
	r := newRig(t, skillsConfig())
	ref := r.skill(skills.SkillBlink, `{"pin":"led_eyes","times":20,"period_ms":1000}`)
	statetest.WaitUntil(t, "led on", func() bool { return r.led().Level() == gpio.High })
	dropped := make(chan struct{})
	go func() { r.a.SetLinkUp(false); close(dropped) }() // the uplink's control goroutine
	took := r.advanceUntil(t, 500*time.Millisecond, "led safe after link loss", func() bool { return r.led().Level() == gpio.Low })
	<-dropped
	t.Logf("safe after %v of fake time", took)
	res := r.resultFor(t, ref)
	if res.OK || res.Error.Code != protocol.CodeUnavailable || !strings.Contains(res.Error.Msg, "dead-man") {
		t.Fatalf("blink result %+v", res.Error)
	}
	writes := r.led().Writes()
	r.pass(30 * time.Second)
	r.a.SetLinkUp(true)
	r.pass(30 * time.Second)
	if r.led().Level() != gpio.Low || r.led().Writes() != writes {
		t.Fatalf("after reconnect: level %v, %d more writes; want off and untouched", r.led().Level(), r.led().Writes()-writes)
	}
	if r.reg.Value("robot_agent_skills_deadman_total") != 1 {
		t.Fatal("dead-man not counted")
	}
	// A fresh command works again.
	if !r.resultFor(t, r.skill(skills.SkillSet, `{"pin":"led_eyes","on":true}`)).OK || r.led().Level() != gpio.High {
		t.Fatal("fresh command after reconnect")
	}
}

func TestDeadmanSteadyOutputAndLinkDownRefusal(t *testing.T) {
	r := newRig(t, skillsConfig())
	r.resultFor(t, r.skill(skills.SkillSet, `{"pin":"led_eyes","on":true}`))
	r.a.SetLinkUp(false)
	if r.led().Level() != gpio.Low {
		t.Fatal("led on after link loss")
	}
	base := r.led().Writes()
	res := r.resultFor(t, r.skill(skills.SkillSet, `{"pin":"led_eyes","on":true}`))
	if res.OK || res.Error.Code != protocol.CodeUnavailable || r.led().Writes() != base {
		t.Fatalf("skill while link down: %+v, writes +%d", res.Error, r.led().Writes()-base)
	}
	if err := r.a.Local(skills.SkillSet, json.RawMessage(`{"pin":"led_eyes","on":true}`)); err == nil || r.led().Writes() != base {
		t.Fatal("local skill drove an output while the link is down")
	}
}

// flakyOutput fails its first Safe calls.
type flakyOutput struct {
	fails atomic.Int32
	on    atomic.Bool
}

func (f *flakyOutput) Set(on bool) error { f.on.Store(on); return nil }
func (f *flakyOutput) Safe() error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("i/o error")
	}
	f.on.Store(false)
	return nil
}

func TestDeadmanRetriesFailedSafe(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	out := &flakyOutput{}
	a, err := skills.New(skillsConfig(), skills.OutputsFunc(func(string) (skills.Output, error) { return out, nil }), &statetest.Emitter{}, state.Deps{Clock: clk, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.SetLinkUp(true)
	a.HandleSkill(context.Background(), &protocol.Skill{Meta: protocol.Meta{EventID: "s1"}, Skill: skills.SkillSet, Args: json.RawMessage(`{"pin":"led_eyes","on":true}`)})
	out.fails.Store(3)
	a.SetLinkUp(false)
	for i := 0; out.on.Load(); i++ {
		if i > 10 {
			t.Fatal("not safe after 10 retries")
		}
		time.Sleep(time.Millisecond)
		clk.Advance(50 * time.Millisecond)
	}
	if clk.Mono() > 500*time.Millisecond {
		t.Fatalf("safe only after %v", clk.Mono())
	}
	if reg.Value("robot_agent_skills_safe_errors_total") != 3 {
		t.Fatalf("safe errors %d", reg.Value("robot_agent_skills_safe_errors_total"))
	}
}

func TestUnavailableOutput(t *testing.T) {
	clk := clock.NewFake()
	em := &statetest.Emitter{}
	// A GPIO module that never opened (host without GPIO).
	g, _ := sgpio.New(gpioConfig(), nil, state.Deps{Clock: clk})
	a, _ := skills.New(skillsConfig(), outputsOf(g), em, state.Deps{Clock: clk})
	defer a.Close()
	a.SetLinkUp(true)
	a.HandleSkill(context.Background(), &protocol.Skill{Meta: protocol.Meta{EventID: "s1"}, Skill: skills.SkillSet, Args: json.RawMessage(`{"pin":"led_eyes","on":true}`)})
	res := statetest.Of[*protocol.SkillResult](em)
	if len(res) != 1 || res[0].Error == nil || res[0].Error.Code != protocol.CodeUnavailable {
		t.Fatalf("results %+v", res)
	}
	a.SetLinkUp(false) // dead-man with no outputs must not panic
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    skills.Config
		want string
	}{
		{skills.Config{Allow: []string{"gpio.fly"}}, `skills.allow[0]: "gpio.fly": want one of gpio.set, gpio.blink, audio.volume`},
		{skills.Config{Allow: []string{"gpio.set", "gpio.set"}}, `skills.allow[1]: "gpio.set": listed twice`},
		{skills.Config{Pins: []string{"GPIO17"}}, `skills.pins[0]: "GPIO17": want an output name from state.gpio.outputs`},
		{skills.Config{RatePerSec: -1}, "skills.rate_per_sec: -1: want 0 < rate <= 1000"},
		{skills.Config{Blink: skills.BlinkLimits{MinPeriod: time.Second, MaxPeriod: 10 * time.Millisecond}}, "skills.blink.max_period: 10ms: want min_period (1s) up to 1m"},
		{skills.Config{FunctionCalls: skills.FunctionCallConfig{OnTimeout: "panic"}}, `skills.function_calls.on_timeout: "panic": want delegate or drop`},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	if err := skillsConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
