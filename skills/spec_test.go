package skills_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/uplink"
)

// TestSpec_3_3_FunctionCallEventIDs: a function call is named by the
// uplink's outbox, <boot_id>-<n> on the same counter as every other event,
// so a gateway that remembers the highest n per boot id de-duplicates it.
func TestSpec_3_3_FunctionCallEventIDs(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	ob := uplink.NewOutbox("0123456789abcdef0123456789abcdef", 0, clk, reg)
	a, err := skills.New(skillsConfig(), outputsOf(newRig(t, skillsConfig()).g), ob, state.Deps{Clock: clk, Metrics: reg, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st := &protocol.State{StateName: "pose", StateValue: json.RawMessage(`"standing"`)}
	first, err := ob.EmitID(st)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := a.Raise(protocol.FunctionCallInfo{Source: "button", Type: "wave"})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := ob.EmitID(&protocol.State{StateName: "pose", StateValue: json.RawMessage(`"sitting"`)})
	want := []string{"0123456789abcdef0123456789abcdef-1", "0123456789abcdef0123456789abcdef-2", "0123456789abcdef0123456789abcdef-3"}
	if got := []string{first, fc, last}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("event ids %v, want %v", got, want)
	}
	// The decision is matched by that id.
	a.HandleArbiter(context.Background(), &protocol.Arbiter{Ref: fc, Decision: protocol.DecisionIllegal})
	if a.Pending() != 0 {
		t.Fatal("decision for the outbox-named call did not settle it")
	}
}

// TestSpec_7_4_OverrideParamSurfaced: the param of an override decision is
// logged and available to the robot's code.
func TestSpec_7_4_OverrideParamSurfaced(t *testing.T) {
	r := newRig(t, skillsConfig())
	fc := raise(t, r, "hi")
	if _, ok := r.a.LastOverride(); ok {
		t.Fatal("override reported before any")
	}
	r.a.HandleArbiter(context.Background(), &protocol.Arbiter{Ref: fc.EventID, Decision: protocol.DecisionOverride, Param: json.RawMessage(`{"say":"handled by the app"}`)})
	o, ok := r.a.LastOverride()
	if !ok || o.Ref != fc.EventID || string(o.Param) != `{"say":"handled by the app"}` || o.Call.Value != "hi" {
		t.Fatalf("LastOverride = %+v, %v", o, ok)
	}
	if l := r.logs.String(); !strings.Contains(l, `handled by the app`) {
		t.Fatalf("override param not logged:\n%s", l)
	}
}
