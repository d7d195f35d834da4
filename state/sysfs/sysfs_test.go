package sysfs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/statetest"
)

type env struct {
	clk *clock.Fake
	reg *metrics.Registry
	em  *statetest.Emitter
	pub *state.Publisher
}

func newEnv() *env {
	e := &env{clk: clock.NewFake(), reg: metrics.NewRegistry(), em: &statetest.Emitter{}}
	e.pub = state.NewPublisher("sysfs", e.em, e.deps())
	return e
}

func (e *env) deps() state.Deps { return state.Deps{Clock: e.clk, Metrics: e.reg} }

func TestBatteryFromFakeTree(t *testing.T) {
	e := newEnv()
	b, err := NewBattery(BatteryConfig{Poll: time.Second}, os.DirFS("testdata/sys"), e.deps())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Open(); err != nil {
		t.Fatal(err)
	}
	if b.dir != "class/power_supply/BAT0" {
		t.Fatalf("supply %q, want BAT0 (AC is Mains)", b.dir)
	}
	armed := make(chan struct{}, 1)
	b.poller.onArm = func() { armed <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, e.pub) }()
	for range 5 {
		<-armed
		e.clk.Advance(time.Second)
	}
	<-armed
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev := e.em.States("battery")
	if len(ev) != 1 {
		t.Fatalf("%d battery events for an unchanged battery over 6 polls, want 1", len(ev))
	}
	want := `{"capacity_pct":87,"status":"not_charging","voltage_v":3.912,"current_a":-0.350,"temp_c":25.1}`
	if string(ev[0].StateValue) != want {
		t.Fatalf("value %s\nwant  %s", ev[0].StateValue, want)
	}
	if errs := e.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestBatteryChanges(t *testing.T) {
	e := newEnv()
	m := fstest.MapFS{
		"class/power_supply/bat/type":        {Data: []byte("Battery\n")},
		"class/power_supply/bat/capacity":    {Data: []byte("50\n")},
		"class/power_supply/bat/status":      {Data: []byte("Discharging\n")},
		"class/power_supply/bat/voltage_now": {Data: []byte("3800000\n")},
	}
	b, _ := NewBattery(BatteryConfig{Supply: "bat", VoltageDeadband: 0.05}, m, e.deps())
	if err := b.Open(); err != nil {
		t.Fatal(err)
	}
	set := func(f, v string) { m["class/power_supply/bat/"+f] = &fstest.MapFile{Data: []byte(v + "\n")} }
	steps := []struct {
		file, val string
		send      bool
	}{
		{"", "", true},                    // first read
		{"voltage_now", "3830000", false}, // inside deadband
		{"voltage_now", "3860000", true},  // 60 mV from last sent
		{"capacity", "49", true},          // capacity change
		{"status", "Charging", true},      // status change
		{"capacity", "49", false},         // same
	}
	for i, s := range steps {
		if s.file != "" {
			set(s.file, s.val)
		}
		before := len(e.em.States("battery"))
		if err := b.poll(time.Duration(i)*time.Second, e.pub); err != nil {
			t.Fatal(err)
		}
		if sent := len(e.em.States("battery")) > before; sent != s.send {
			t.Fatalf("step %d (%s=%s): sent=%v, want %v", i, s.file, s.val, sent, s.send)
		}
	}
	set("capacity", "abc")
	if err := b.poll(time.Minute, e.pub); err == nil || !strings.Contains(err.Error(), `capacity is "abc"`) {
		t.Fatalf("bad capacity: %v", err)
	}
	set("capacity", "250")
	if err := b.poll(time.Minute, e.pub); err == nil || !strings.Contains(err.Error(), "250, want 0..100") {
		t.Fatalf("out of range capacity: %v", err)
	}
}

func TestBatteryUnavailable(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no class":   {},
		"only mains": {"class/power_supply/AC/type": {Data: []byte("Mains\n")}},
	} {
		b, _ := NewBattery(BatteryConfig{}, fsys, state.Deps{})
		if err := b.Open(); !errors.Is(err, state.ErrUnavailable) {
			t.Errorf("%s: %v, want unavailable", name, err)
		}
	}
	b, _ := NewBattery(BatteryConfig{Supply: "BAT9"}, os.DirFS("testdata/sys"), state.Deps{})
	if err := b.Open(); !errors.Is(err, state.ErrUnavailable) || !strings.Contains(err.Error(), `"BAT9"`) {
		t.Errorf("missing supply: %v", err)
	}
}

func TestBatteryRunFailsAfterRepeatedErrors(t *testing.T) {
	e := newEnv()
	e.clk.SetAutoAdvance(true)
	m := fstest.MapFS{
		"class/power_supply/bat/type":     {Data: []byte("Battery\n")},
		"class/power_supply/bat/capacity": {Data: []byte("x\n")},
	}
	b, _ := NewBattery(BatteryConfig{Supply: "bat", Poll: 100 * time.Millisecond}, m, e.deps())
	if err := b.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, e.pub) }()
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "5 reads in a row failed") {
				t.Fatalf("Run: %v", err)
			}
			if n := e.reg.Value("robot_agent_sysfs_read_errors_total"); n != 5 {
				t.Fatalf("%d read errors counted", n)
			}
			return
		default:
			e.clk.Advance(100 * time.Millisecond)
			time.Sleep(100 * time.Microsecond)
		}
	}
}

func TestThermalZones(t *testing.T) {
	e := newEnv()
	th, _ := NewThermal(ThermalConfig{}, os.DirFS("testdata/sys"), e.deps())
	if err := th.Open(); err != nil {
		t.Fatal(err)
	}
	if err := th.poll(0, e.pub); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	var order []string
	for _, s := range e.em.States("") {
		var v struct {
			TempC float64 `json:"temp_c"`
		}
		if err := json.Unmarshal(s.StateValue, &v); err != nil {
			t.Fatal(err)
		}
		got[s.StateName] = v.TempC
		order = append(order, s.StateName)
	}
	want := map[string]float64{"thermal.cpu-thermal": 48.3, "thermal.acpitz": 40, "thermal.acpitz_1": 41, "thermal.soc-thermal": 50.5}
	if len(got) != len(want) {
		t.Fatalf("zones %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if order[len(order)-1] != "thermal.soc-thermal" {
		t.Errorf("zone order %v: thermal_zone10 should come last", order)
	}
	// Unchanged: nothing more.
	th.poll(time.Second, e.pub)
	if n := len(e.em.States("")); n != 4 {
		t.Fatalf("%d events after an unchanged poll, want 4", n)
	}
	// Filter.
	th2, _ := NewThermal(ThermalConfig{Zones: []string{"cpu-thermal"}}, os.DirFS("testdata/sys"), e.deps())
	if err := th2.Open(); err != nil || len(th2.zones) != 1 {
		t.Fatalf("filtered zones %v %v", th2.zones, err)
	}
	th3, _ := NewThermal(ThermalConfig{}, os.DirFS("testdata/empty"), e.deps())
	if err := th3.Open(); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("no zones: %v", err)
	}
}

func TestSimFSFollowsClock(t *testing.T) {
	e := newEnv()
	fsys := NewSimFS(e.clk)
	b, _ := NewBattery(BatteryConfig{}, fsys, e.deps())
	th, _ := NewThermal(ThermalConfig{Deadband: 0.5}, fsys, e.deps())
	if err := b.Open(); err != nil {
		t.Fatal(err)
	}
	if err := th.Open(); err != nil {
		t.Fatal(err)
	}
	b.poll(0, e.pub)
	th.poll(0, e.pub)
	e.clk.Advance(30 * time.Second)
	b.poll(e.clk.Mono(), e.pub)
	th.poll(e.clk.Mono(), e.pub)
	bat := e.em.States("battery")
	if len(bat) != 2 || !strings.Contains(string(bat[0].StateValue), `"capacity_pct":100`) || !strings.Contains(string(bat[1].StateValue), `"capacity_pct":99`) {
		t.Fatalf("battery %v", bat)
	}
	if cpu := e.em.States("thermal.cpu-thermal"); len(cpu) != 2 {
		t.Fatalf("cpu-thermal %d events, want 2 (moved > deadband in 30 s)", len(cpu))
	}
}
