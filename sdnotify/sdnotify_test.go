package sdnotify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

// fakeManager is a stand-in for systemd's notify socket: a real unixgram
// socket that records every datagram.
type fakeManager struct {
	t    *testing.T
	conn *net.UnixConn
	name string
}

func newFakeManager(t *testing.T, abstract bool) *fakeManager {
	t.Helper()
	var name string
	if abstract {
		name = fmt.Sprintf("@robot-agent-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	} else {
		dir, err := os.MkdirTemp("", "sdn")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		name = filepath.Join(dir, "notify")
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fakeManager{t: t, conn: conn, name: name}
}

// next returns the next datagram, failing the test after a generous wait.
func (m *fakeManager) next() string {
	m.t.Helper()
	buf := make([]byte, 4096)
	m.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := m.conn.Read(buf)
	if err != nil {
		m.t.Fatalf("fake notify socket: no datagram: %v", err)
	}
	return string(buf[:n])
}

// none asserts that nothing is queued right now.
func (m *fakeManager) none() {
	m.t.Helper()
	buf := make([]byte, 4096)
	m.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := m.conn.Read(buf); err == nil {
		m.t.Fatalf("unexpected datagram %q", buf[:n])
	}
}

func TestNewRejectsBadSocket(t *testing.T) {
	for _, s := range []string{"relative/path", "x", "@"} {
		if _, err := New(s); !errors.Is(err, ErrBadSocket) {
			t.Errorf("New(%q) err = %v, want ErrBadSocket", s, err)
		}
	}
}

func TestDisabledIsNoop(t *testing.T) {
	n, err := FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if n.Enabled() {
		t.Fatal("Enabled with empty NOTIFY_SOCKET")
	}
	for _, f := range []func() error{n.Ready, n.Stopping, n.Watchdog, func() error { return n.Status("x") }} {
		if err := f(); err != nil {
			t.Fatalf("disabled notifier: %v", err)
		}
	}
	var nilN *Notifier
	if err := nilN.Ready(); err != nil || nilN.Enabled() {
		t.Fatalf("nil notifier: %v", err)
	}
}

func TestNotifierSends(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		t.Run(fmt.Sprintf("abstract=%v", abstract), func(t *testing.T) {
			m := newFakeManager(t, abstract)
			n, err := FromEnv(func(k string) string {
				if k == "NOTIFY_SOCKET" {
					return m.name
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Ready(); err != nil {
				t.Fatal(err)
			}
			if err := n.Ready(); err != nil { // second READY is swallowed
				t.Fatal(err)
			}
			if err := n.Status("uplink: connected\nto gw"); err != nil {
				t.Fatal(err)
			}
			if err := n.Stopping(); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"READY=1", "STATUS=uplink: connected to gw", "STOPPING=1"} {
				if got := m.next(); got != want {
					t.Fatalf("datagram %q, want %q", got, want)
				}
			}
			m.none()
		})
	}
}

func TestSendErrorNamesSocket(t *testing.T) {
	n, err := New("/nonexistent/robot-agent/notify")
	if err != nil {
		t.Fatal(err)
	}
	err = n.Ready()
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/robot-agent/notify") {
		t.Fatalf("err = %v, want one naming the socket", err)
	}
}

func TestWatchdogTimeout(t *testing.T) {
	tests := []struct {
		usec, pid string
		want      time.Duration
		wantErr   bool
	}{
		{"", "", 0, false},
		{"30000000", "", 30 * time.Second, false},
		{"30000000", "42", 30 * time.Second, false},
		{"30000000", "43", 0, false}, // meant for another process
		{"abc", "", 0, true},
		{"0", "", 0, true},
		{"-5", "", 0, true},
		{"30000000", "x", 0, true},
	}
	for _, tt := range tests {
		env := map[string]string{"WATCHDOG_USEC": tt.usec, "WATCHDOG_PID": tt.pid}
		got, err := WatchdogTimeout(func(k string) string { return env[k] }, 42)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("usec=%q pid=%q: got %v, %v; want %v, err=%v", tt.usec, tt.pid, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "sdnotify: ") {
			t.Errorf("error %q lacks package prefix", err)
		}
	}
}

// TestWatchdogPingsOnlyWhileLoopsBeat drives Run with a fake clock against
// a real notify socket: pings flow while all loops beat, stop while one loop
// stalls, and resume when it recovers.
func TestWatchdogPingsOnlyWhileLoopsBeat(t *testing.T) {
	m := newFakeManager(t, false)
	n, err := New(m.name)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	w := NewWatchdog(clk, n, 2*time.Second, nil, reg) // ping every 1 s
	armed := make(chan struct{}, 1)
	w.armed = func() { armed <- struct{}{} }
	uplink := w.Register("uplink", 2500*time.Millisecond)
	capture := w.Register("capture", 2500*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-armed

	// tick advances one period once Run has armed its timer and waits until
	// Run has handled the tick.
	tick := func() {
		t.Helper()
		clk.Advance(w.Period())
		select {
		case <-armed:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not handle the tick")
		}
	}

	// Healthy: both loops beat every period.
	for i := 0; i < 3; i++ {
		uplink.Beat()
		capture.Beat()
		tick()
		if got := m.next(); got != "WATCHDOG=1" {
			t.Fatalf("healthy tick %d: %q, want WATCHDOG=1", i, got)
		}
	}

	// capture stalls; uplink keeps beating. The first tick is still within
	// capture's 2.5 s limit (silent 2 s); from the second on, pings stop.
	uplink.Beat()
	tick()
	if got := m.next(); got != "WATCHDOG=1" {
		t.Fatalf("within limit: %q", got)
	}
	for i := 0; i < 4; i++ {
		uplink.Beat()
		tick()
		if i == 0 {
			got := m.next()
			if !strings.HasPrefix(got, "STATUS=watchdog: main loop stalled: capture") || strings.Contains(got, "uplink") {
				t.Fatalf("stall status %q", got)
			}
		}
		m.none()
	}
	if got := reg.Value("robot_agent_watchdog_stalled_loops"); got != 1 {
		t.Fatalf("stalled gauge %d, want 1", got)
	}
	if got := reg.Value("robot_agent_watchdog_skipped_total"); got != 4 {
		t.Fatalf("skipped %d, want 4", got)
	}

	// capture recovers: status resets, then pings resume.
	uplink.Beat()
	capture.Beat()
	tick()
	if got := m.next(); got != "STATUS=running" {
		t.Fatalf("recovery status %q", got)
	}
	if got := m.next(); got != "WATCHDOG=1" {
		t.Fatalf("after recovery %q", got)
	}
	if got := reg.Value("robot_agent_watchdog_pings_total"); got != 5 {
		t.Fatalf("pings %d, want 5", got)
	}

	// A loop that ended on purpose no longer holds pings back.
	capture.Done()
	for i := 0; i < 3; i++ { // capture silent 2, 3, 4 s: past its limit
		uplink.Beat()
		tick()
		if got := m.next(); got != "WATCHDOG=1" {
			t.Fatalf("after Done, tick %d: %q", i, got)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestWatchdogDisabledRunWaits(t *testing.T) {
	w := NewWatchdog(clock.NewFake(), &Notifier{}, 0, nil, nil)
	hb := w.Register("playback", time.Second)
	hb.Beat()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.Tick() {
		t.Fatal("fresh heartbeat reported unhealthy")
	}
}

// recorder is a Sender that records calls, for the allocation test.
type recorder struct{ pings int }

func (r *recorder) Watchdog() error     { r.pings++; return nil }
func (r *recorder) Status(string) error { return nil }

func TestBeatDoesNotAllocate(t *testing.T) {
	w := NewWatchdog(clock.NewReal(), &recorder{}, time.Second, nil, nil)
	hb := w.Register("playback", time.Second)
	if a := testing.AllocsPerRun(1000, hb.Beat); a != 0 {
		t.Fatalf("Beat allocates %v times", a)
	}
}

func BenchmarkBeat(b *testing.B) {
	w := NewWatchdog(clock.NewReal(), &recorder{}, time.Second, nil, nil)
	hb := w.Register("playback", time.Second)
	b.ReportAllocs()
	for b.Loop() {
		hb.Beat()
	}
}

func TestRegisterProgress(t *testing.T) {
	clk := clock.NewFake()
	rec := &recorder{}
	w := NewWatchdog(clk, rec, 2*time.Second, nil, nil)
	var frames metrics.Counter
	w.RegisterProgress("playback", 2500*time.Millisecond, frames.Value)

	tests := []struct {
		advance bool // the loop made progress during this period
		healthy bool
	}{
		{true, true},
		{true, true},
		{false, true},  // silent 1 s
		{false, true},  // silent 2 s
		{false, false}, // silent 3 s > 2.5 s
		{false, false},
		{true, true}, // progress again
	}
	for i, tt := range tests {
		if tt.advance {
			frames.Add(480)
		}
		clk.Advance(time.Second)
		if got := w.Tick(); got != tt.healthy {
			t.Fatalf("period %d: healthy=%v, want %v (stalled: %v)", i, got, tt.healthy, w.Stalled())
		}
	}
	if rec.pings != 5 {
		t.Fatalf("pings %d, want 5", rec.pings)
	}
}
