package modules_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/identity"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/modules"
	"github.com/robot-agent/robot-agent/state/statetest"
)

// The simulated robot as `make run --sim` wires it, on the fake clock:
// state, face and greet events come out, and a gateway skill blinks the
// simulated LED.
func TestSimulatedRobot(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	em := &statetest.Emitter{}
	deps := state.Deps{Clock: clk, Metrics: reg}
	stCfg, skCfg, idCfg := modules.SimConfig("")
	sim := modules.NewSim(stCfg, deps)
	set, err := modules.Build(stCfg, sim.Devices, em, deps)
	if err != nil {
		t.Fatal(err)
	}
	arb, err := skills.New(skCfg, set.Outputs(), em, deps)
	if err != nil {
		t.Fatal(err)
	}
	defer arb.Close()
	set.Raiser(arb)
	sim.RegisterHandlers(arb)
	ids, err := identity.New(idCfg, em, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set.Manager.Start(ctx)
	defer set.Manager.Stop()
	for _, s := range set.Manager.Status() {
		if s.Status != state.StatusRunning {
			t.Fatalf("module %s: %s %s", s.Name, s.Status, s.Error)
		}
	}
	go ids.Run(ctx)
	go sim.Run(ctx, ids.SubmitLine)
	arb.SetLinkUp(true)

	// 12 s of simulated time in 5 ms steps.
	led := sim.Pins.Get("GPIO17")
	for clk.Mono() < 12*time.Second {
		if clk.Mono() == 6500*time.Millisecond {
			arb.HandleSkill(ctx, &protocol.Skill{Meta: protocol.Meta{EventID: "sk-1"}, Skill: skills.SkillBlink, Args: json.RawMessage(`{"pin":"led_eyes","times":2,"period_ms":200}`)})
		}
		time.Sleep(50 * time.Microsecond)
		clk.Advance(5 * time.Millisecond)
	}
	has := func(name string) bool { return len(em.States(name)) > 0 }
	for _, n := range []string{"gpio.button_head", "gpio.bump_front", "imu.accel", "imu.gyro", "imu.tilt", "imu.motion", "battery", "thermal.cpu-thermal"} {
		if !has(n) {
			t.Errorf("no %s event in 12 s of simulation", n)
		}
	}
	// The button was pressed twice (2 s and 8 s): press+release each, after the initial state.
	if n := len(em.States("gpio.button_head")); n != 5 {
		t.Errorf("%d button events, want 5 (initial + 2 presses + 2 releases)", n)
	}
	if n := len(statetest.Of[*protocol.FunctionCall](em)); n != 2 {
		t.Errorf("%d function calls from button presses, want 2", n)
	}
	fi := statetest.Of[*protocol.FaceInfo](em)
	gs := statetest.Of[*protocol.GreetSignal](em)
	if len(fi) == 0 || len(gs) != 1 || gs[0].UID != "alice" {
		t.Errorf("face_info %d, greets %+v; want alice greeted once", len(fi), gs)
	}
	var res *protocol.SkillResult
	for _, r := range statetest.Of[*protocol.SkillResult](em) {
		if r.Ref == "sk-1" {
			res = r
		}
	}
	if res == nil || !res.OK {
		t.Fatalf("blink result %+v %+v", res, res.Error)
	}
	// No gateway decides the button's function calls here: after the 3 s
	// timeout the default handler blinks the LED (at ~5 s and ~11 s), and
	// the gateway's skill blinks it at 6.5 s.
	if n := reg.Value("robot_agent_function_calls_timeouts_total"); n != 2 {
		t.Errorf("%d function call timeouts, want 2", n)
	}
	if w := led.Writes(); w != 1+3*4 { // safe level at open + 3 double blinks
		t.Errorf("LED writes %d, want 13", w)
	}
	if errs := em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
	// Still robot between motions: IMU sends a small fraction of its samples.
	samples := reg.Value("robot_agent_imu_samples_total")
	imuEvents := len(em.States("imu.accel")) + len(em.States("imu.gyro")) + len(em.States("imu.tilt"))
	t.Logf("%d IMU samples → %d coalesced events; %d events in total", samples, imuEvents, len(em.All()))
	if samples < 2000 || int64(imuEvents) > samples/10 {
		t.Errorf("%d samples, %d IMU events", samples, imuEvents)
	}
}

func TestBuildWithoutHardware(t *testing.T) {
	// Real devices on a machine without GPIO/I2C/battery: every module
	// except thermal may be unavailable, none fails the agent.
	cfg, _, _ := modules.SimConfig("")
	cfg.Battery.Root = t.TempDir()
	cfg.Thermal.Root = t.TempDir()
	em := &statetest.Emitter{}
	set, err := modules.Build(cfg, modules.RealDevices(cfg), em, state.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	set.Manager.Start(context.Background())
	defer set.Manager.Stop()
	for _, s := range set.Manager.Status() {
		if s.Status != state.StatusUnavailable && s.Status != state.StatusRunning {
			t.Errorf("%s: %s (%s)", s.Name, s.Status, s.Error)
		}
	}
	for _, s := range set.Manager.Status() {
		if s.Name == "gpio" && s.Status == state.StatusUnavailable {
			if _, err := set.Outputs().Output("led_eyes"); !errors.Is(err, state.ErrUnavailable) {
				t.Errorf("output on unavailable gpio: %v", err)
			}
		}
	}
	bad := cfg
	bad.IMU.SampleHz = -3
	if _, err := modules.Build(bad, modules.Devices{}, em, state.Deps{}); err == nil || !strings.Contains(err.Error(), "imu.sample_hz") {
		t.Fatalf("invalid config: %v", err)
	}
}
