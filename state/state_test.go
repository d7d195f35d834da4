package state_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/statetest"
)

type fakeModule struct {
	name    string
	openErr func(n int) error // by Open call number (1-based)
	runErr  func(n int) error // nil: run until ctx done
	opens   atomic.Int32
	runs    atomic.Int32
	closes  atomic.Int32
}

func (m *fakeModule) Name() string { return m.name }
func (m *fakeModule) Open() error {
	n := int(m.opens.Add(1))
	if m.openErr != nil {
		return m.openErr(n)
	}
	return nil
}
func (m *fakeModule) Run(ctx context.Context, pub *state.Publisher) error {
	n := int(m.runs.Add(1))
	pub.Publish(m.name+".run", json.RawMessage(fmt.Sprint(n)), pub.Clock().Mono())
	if m.runErr != nil {
		if err := m.runErr(n); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}
func (m *fakeModule) Close() error { m.closes.Add(1); return nil }

func statusOf(mgr *state.Manager, name string) state.ModuleStatus {
	for _, s := range mgr.Status() {
		if s.Name == name {
			return s
		}
	}
	return state.ModuleStatus{}
}

func TestManagerLifecycle(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	em := &statetest.Emitter{}
	mgr := state.NewManager(em, state.Deps{Clock: clk, Metrics: reg})
	ok := &fakeModule{name: "ok"}
	gone := &fakeModule{name: "gone", openErr: func(int) error { return fmt.Errorf("no device: %w", state.ErrUnavailable) }}
	flaky := &fakeModule{name: "flaky", runErr: func(n int) error {
		if n == 1 {
			return errors.New("bus error")
		}
		return nil
	}}
	if err := mgr.Add(ok, gone, flaky); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(&fakeModule{name: "ok"}); err == nil {
		t.Fatal("duplicate name accepted")
	}
	mgr.Start(context.Background())
	if err := mgr.Add(&fakeModule{name: "late"}); err == nil {
		t.Fatal("Add after Start accepted")
	}
	if s := statusOf(mgr, "gone"); s.Status != state.StatusUnavailable || !strings.Contains(s.Error, "no device") {
		t.Fatalf("gone: %+v", s)
	}
	statetest.WaitUntil(t, "flaky failed", func() bool { return statusOf(mgr, "flaky").Status == state.StatusFailed })
	if flaky.closes.Load() != 1 {
		t.Fatal("failed module not closed")
	}
	// Reopened after the 1 s backoff on the fake clock.
	if d := advanceUntil(t, clk, func() bool { return flaky.runs.Load() == 2 }); d < 950*time.Millisecond || d > 1100*time.Millisecond {
		t.Fatalf("rerun after %v, want the 1 s backoff", d)
	}
	statetest.WaitUntil(t, "flaky running", func() bool { return statusOf(mgr, "flaky").Status == state.StatusRunning })
	if reg.Value("robot_agent_state_module_flaky_up") != 1 || reg.Value("robot_agent_state_module_gone_up") != 0 {
		t.Fatal("up gauges")
	}
	// Module status events: gone unavailable, flaky running/failed/running, ok running.
	var got []string
	for _, s := range em.States("") {
		if strings.HasPrefix(s.StateName, "module.") {
			var v state.ModuleStatus
			json.Unmarshal(s.StateValue, &v)
			got = append(got, s.StateName+"="+string(v.Status))
		}
	}
	want := "module.ok=running module.gone=unavailable module.flaky=running module.flaky=failed module.flaky=running"
	if strings.Join(got, " ") != want {
		t.Fatalf("status events\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if err := mgr.Stop(); err != nil {
		t.Fatal(err)
	}
	if ok.closes.Load() != 1 || flaky.closes.Load() != 2 || gone.closes.Load() != 0 {
		t.Fatalf("closes ok %d flaky %d gone %d", ok.closes.Load(), flaky.closes.Load(), gone.closes.Load())
	}
	if s := statusOf(mgr, "ok"); s.Status != state.StatusStopped {
		t.Fatalf("ok after Stop: %v", s.Status)
	}
	if errs := em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestManagerRetriesFailedOpenWithBackoff(t *testing.T) {
	clk := clock.NewFake()
	mgr := state.NewManager(&statetest.Emitter{}, state.Deps{Clock: clk})
	m := &fakeModule{name: "m", openErr: func(n int) error {
		if n < 3 {
			return errors.New("busy")
		}
		return nil
	}}
	mgr.Add(m)
	mgr.Start(context.Background())
	defer mgr.Stop()
	if statusOf(mgr, "m").Status != state.StatusFailed {
		t.Fatal("not failed")
	}
	if d := advanceUntil(t, clk, func() bool { return m.opens.Load() == 2 }); d < 950*time.Millisecond || d > 1100*time.Millisecond {
		t.Fatalf("second open after %v, want the 1 s backoff", d)
	}
	if d := advanceUntil(t, clk, func() bool { return m.opens.Load() == 3 }); d < 1950*time.Millisecond || d > 2100*time.Millisecond {
		t.Fatalf("third open after %v, want the doubled 2 s backoff", d)
	}
	statetest.WaitUntil(t, "running", func() bool { return m.runs.Load() == 1 })
}

// advanceUntil moves clk in 10 ms steps until cond holds and returns the
// fake time it took.
func advanceUntil(t *testing.T, clk *clock.Fake, cond func() bool) time.Duration {
	t.Helper()
	start := clk.Mono()
	for !cond() {
		if clk.Mono()-start > 10*time.Second {
			t.Fatal("condition not met within 10 s of fake time")
		}
		time.Sleep(300 * time.Microsecond)
		clk.Advance(10 * time.Millisecond)
	}
	return clk.Mono() - start
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestPublisherCountsAndThrottlesErrors(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	logs := &syncBuf{}
	em := &statetest.Emitter{}
	pub := state.NewPublisher("m", em, state.Deps{Clock: clk, Metrics: reg, Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err := pub.Publish("a", json.RawMessage(`1`), 1500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	s := em.States("a")[0]
	if s.TS != 1500 || string(s.StateValue) != "1" || s.EventID == "" {
		t.Fatalf("state %+v", s)
	}
	em.SetFail(errors.New("outbox full"))
	for range 100 {
		if err := pub.Publish("a", json.RawMessage(`1`), 0); err == nil {
			t.Fatal("error swallowed")
		}
	}
	clk.Advance(10 * time.Second)
	pub.Publish("a", json.RawMessage(`1`), 0)
	if reg.Value("robot_agent_state_emit_errors_total") != 101 || reg.Value("robot_agent_state_events_total") != 1 {
		t.Fatalf("counters %v", reg.Snapshot())
	}
	if n := strings.Count(logs.String(), "event not sent"); n != 2 {
		t.Fatalf("%d error log lines, want 2 (throttled)", n)
	}
	if !strings.Contains(logs.String(), "suppressed_since_last_log=99") {
		t.Fatalf("suppressed count missing:\n%s", logs)
	}
}

func TestCoalescer(t *testing.T) {
	em := &statetest.Emitter{}
	pub := state.NewPublisher("imu", em, state.Deps{})
	c := state.NewCoalescer(pub, 5*time.Second,
		state.Key{Name: "v", Fields: []string{"x", "y"}, Deadband: 0.5, Decimals: 2},
		state.Key{Name: "w", Fields: []string{"a"}, Deadband: 1, Decimals: 0},
	)
	ms := time.Millisecond
	// Key w never updated: never sent. First v always sent.
	c.Update(0, 1*ms, []float64{1, 2})
	c.Update(0, 2*ms, []float64{1.1, 2}) // latest wins
	if n := c.Flush(10 * ms); n != 1 {
		t.Fatalf("first flush sent %d", n)
	}
	c.Update(0, 20*ms, []float64{1.5, 2.4}) // within 0.5 of sent
	if n := c.Flush(30 * ms); n != 0 {
		t.Fatal("sent inside deadband")
	}
	c.Update(0, 40*ms, []float64{1.7, -0.001}) // x moved 0.6
	c.Flush(50 * ms)
	c.Flush(60 * ms) // nothing new
	// Heartbeat after 5 s of silence, stamped with the flush time.
	c.Flush(5050 * ms)
	ev := em.States("v")
	if len(ev) != 3 {
		t.Fatalf("%d events", len(ev))
	}
	for i, want := range []struct {
		v  string
		ts int64
	}{{`{"x":1.10,"y":2.00}`, 2000}, {`{"x":1.70,"y":0.00}`, 40000}, {`{"x":1.70,"y":0.00}`, 5050000}} {
		if string(ev[i].StateValue) != want.v || ev[i].TS != want.ts {
			t.Errorf("event %d: %s @%d, want %s @%d", i, ev[i].StateValue, ev[i].TS, want.v, want.ts)
		}
	}
	if sent, skipped := c.Stats(); sent != 3 || skipped != 1 {
		t.Fatalf("stats %d/%d", sent, skipped)
	}
	if len(em.States("w")) != 0 {
		t.Fatal("never-updated key sent")
	}
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		d    int
		want string
	}{{-0.001, 2, "0.00"}, {-0.0, 1, "0.0"}, {-1.25, 1, "-1.2"}, {3, 0, "3"}, {nanv(), 2, "0"}} {
		if got := string(state.AppendFloat(nil, tc.v, tc.d)); got != tc.want {
			t.Errorf("AppendFloat(%v, %d) = %s, want %s", tc.v, tc.d, got, tc.want)
		}
	}
}

func nanv() float64 { z := 0.0; return z / z }
