package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/internal/faultproxy"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/spool"
	"github.com/robot-agent/robot-agent/uplink"
)

// jumpClock is the real clock whose wall time can be stepped (an NTP step
// or an RTC fix after boot); its monotonic time never jumps.
type jumpClock struct {
	*clock.Real
	off atomic.Int64
}

func (j *jumpClock) Now() time.Time       { return j.Real.Now().Add(time.Duration(j.off.Load())) }
func (j *jumpClock) jump(d time.Duration) { j.off.Add(int64(d)) }

// robot is the simulated robot: the uplink client in process.
type robot struct {
	c      *uplink.Client
	reg    *metrics.Registry
	clk    *jumpClock
	mu     sync.Mutex
	acted  map[string]int // function-call decisions handed to the application, by the gateway's key
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *robot) HandleControl(_ context.Context, m protocol.Message) {
	if a, ok := m.(*protocol.Arbiter); ok {
		var p struct{ K string }
		json.Unmarshal(a.Param, &p)
		r.mu.Lock()
		r.acted[p.K]++
		r.mu.Unlock()
	}
}

func startRobot(t *testing.T, url string, sp uplink.Spool, mod func(*uplink.Config)) *robot {
	t.Helper()
	r := &robot{reg: metrics.NewRegistry(), clk: &jumpClock{Real: clock.NewReal()}, done: make(chan struct{}), acted: map[string]int{}}
	cfg := uplink.Config{URL: url, Token: "chaos-token", DeviceID: "chaos", Spool: sp,
		Hello: protocol.RobotHello{AgentVersion: "chaos", BootID: fmt.Sprintf("b%d", time.Now().UnixNano()%1e9),
			AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20}},
		DefaultKeepalive: protocol.Keepalive{IntervalMS: 500, TimeoutMS: 1500},
	}
	if mod != nil {
		mod(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() && long() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	c, err := uplink.New(cfg, r.clk, r.reg, log, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { defer close(r.done); c.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func (r *robot) actedCopy() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.acted)
}

func (r *robot) nActed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acted)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func (r *robot) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// stream raises events at rate per second until ctx ends: state events, and
// every fcEvery-th a function call. Raised ids go to the ledger.
func (r *robot) stream(ctx context.Context, l *ledger, rate, fcEvery int) (refused *atomic.Int64) {
	refused = new(atomic.Int64)
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var m protocol.Message
			if fcEvery > 0 && i%fcEvery == 0 {
				m = &protocol.FunctionCall{Meta: protocol.Meta{Type: protocol.TypeFunctionCall},
					FunctionCall: protocol.FunctionCallInfo{Source: "button", Policy: "arbiter", Type: "press", Value: "head"}}
			} else {
				v, _ := json.Marshal(i)
				m = &protocol.State{Meta: protocol.Meta{Type: protocol.TypeState}, StateName: "counter", StateValue: v}
			}
			id, err := r.c.Outbox().EmitID(m)
			if err != nil {
				if !errors.Is(err, uplink.ErrOutboxFull) {
					panic(err)
				}
				refused.Add(1)
				continue
			}
			l.raise(id)
		}
	}()
	return refused
}

// TestNetworkFaults: one stream through the proxy while it kills,
// black-holes, discards, stops one direction, delays with jitter, caps
// bandwidth and refuses connections, and the wall clock steps ±1 h.
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	start := time.Now()
	l := newLedger()
	g := newAccGateway(t, l)
	p, err := faultproxy.New(g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := startRobot(t, "ws://"+p.Addr()+gateway.Path, spool.NewMemory(), func(c *uplink.Config) {
		c.BackoffBase, c.BackoffCap = 50*time.Millisecond, time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refused := r.stream(ctx, l, 100, 10)
	hold := time.Second
	rounds := 1
	if long() {
		hold, rounds = 4*time.Second, 5
	}
	faults := []struct {
		name    string
		on, off func()
	}{
		{"kill", func() { p.KillAll() }, func() {}},
		{"black hole", func() { p.BlackHole(true) }, func() { p.BlackHole(false) }},
		{"read and discard up", func() { p.Discard(faultproxy.Up, true) }, func() { p.Discard(faultproxy.Up, false); p.KillAll() }},
		{"stop down direction", func() { p.StopDirection(faultproxy.Down, true) }, func() { p.StopDirection(faultproxy.Down, false) }},
		{"delay 200ms ±100ms", func() { p.SetDelay(200*time.Millisecond, 100*time.Millisecond) }, func() { p.SetDelay(0, 0) }},
		{"bandwidth 8 KiB/s", func() { p.SetBandwidth(8 << 10) }, func() { p.SetBandwidth(0) }},
		{"refuse + kill", func() { p.Refuse(true); p.KillAll() }, func() { p.Refuse(false) }},
		{"clock +1h", func() { r.clk.jump(time.Hour) }, func() {}},
		{"clock -1h", func() { r.clk.jump(-time.Hour) }, func() {}},
	}
	for round := 0; round < rounds; round++ {
		for _, f := range faults {
			time.Sleep(hold / 2)
			f.on()
			time.Sleep(hold)
			f.off()
		}
	}
	cancel()
	missing := l.waitDelivered(20 * time.Second)
	raised, delivered, dupes := l.counts()
	time.Sleep(200 * time.Millisecond)
	report(row{scenario: "network faults (kill, black hole, discard, one-way stop, delay/jitter, 8 KiB/s, refuse, clock ±1 h)", cycles: rounds * len(faults),
		raised: raised, delivered: delivered, lost: len(missing), wireDupes: dupes, decisions: g.decisionsAcked(), acted: r.nActed(),
		note: fmt.Sprintf("%d refused at source (outbox full)", refused.Load()), elapsed: time.Since(start)})
	if len(missing) > 0 {
		t.Fatalf("%d of %d events never reached the gateway (first %v)", len(missing), raised, missing[:min(5, len(missing))])
	}
	if refused.Load() > 0 {
		t.Errorf("%d events refused at the source", refused.Load())
	}
	g.checkDecisions(t, r.actedCopy())
	t.Logf("raised %d, delivered %d, wire duplicates %d, decisions %d/%d", raised, delivered, dupes, g.decisionsAcked(), r.nActed())
}

// TestGatewayRestarts: the gateway restarts (crash or planned, with
// go_away) during a stream; a restarted gateway reuses its session and
// event ids. Nothing is lost, every decision that reaches the robot is
// acted on, and after a restart that follows a stable session the robot is
// back within 2 s (p95) of the gateway.
func TestGatewayRestarts(t *testing.T) {
	t.Parallel()
	start := time.Now()
	l := newLedger()
	g := newAccGateway(t, l)
	restarts, stable := 4, 1500*time.Millisecond
	if long() {
		restarts, stable = 20, 27*time.Second // 20 restarts in a 10-minute stream
	}
	r := startRobot(t, g.url(), spool.NewMemory(), func(c *uplink.Config) {
		if !long() {
			c.BackoffReset = time.Second // "stable" scaled down with the session length
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refused := r.stream(ctx, l, 50, 5)
	var goAwayBack []time.Duration
	for i := 0; i < restarts; i++ {
		time.Sleep(stable)
		graceful := i%2 == 1
		down := time.Duration(500+(i*337)%2500) * time.Millisecond
		if graceful {
			// go_away with a delay longer than the restart: the robot
			// comes back at the announced time.
			g.stopWithGoAway(true, down+500*time.Millisecond)
			left := time.Now()
			time.Sleep(down)
			g.start()
			conns := r.reg.Value("robot_agent_uplink_connects_total")
			for r.reg.Value("robot_agent_uplink_connects_total") == conns && time.Since(left) < 10*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			goAwayBack = append(goAwayBack, time.Since(left)-(down+500*time.Millisecond))
		} else {
			g.stop(false)
			time.Sleep(down)
			g.start()
		}
	}
	time.Sleep(stable)
	cancel()
	missing := l.waitDelivered(20 * time.Second)
	raised, delivered, dupes := l.counts()
	time.Sleep(300 * time.Millisecond)
	rc := g.reconnects()
	// Crash restarts only: go_away ones wait the announced delay on purpose.
	var crash []time.Duration
	for i, d := range rc {
		if i%2 == 0 {
			crash = append(crash, d)
		}
	}
	p50, p95 := percentile(crash, 0.5), percentile(crash, 0.95)
	report(row{scenario: fmt.Sprintf("gateway restarts (%d crash, %d go_away) during a %v stream", (restarts+1)/2, restarts/2, time.Since(start).Round(time.Second)),
		cycles: restarts, raised: raised, delivered: delivered, lost: len(missing), wireDupes: dupes,
		decisions: g.decisionsAcked(), acted: r.nActed(), reconnectP50: p50, P95: p95,
		note:    fmt.Sprintf("go_away: back %v after the announced delay (max); %d refused", maxDur(goAwayBack).Round(time.Millisecond), refused.Load()),
		elapsed: time.Since(start)})
	if len(missing) > 0 {
		t.Fatalf("%d of %d events lost (first %v)", len(missing), raised, missing[:min(5, len(missing))])
	}
	if g.checkDecisions(t, r.actedCopy()) > 0 || g.decisionsAcked() == 0 {
		t.Errorf("decisions acked by the robot %d, acted on %d", g.decisionsAcked(), r.nActed())
	}
	if p95 > 2*time.Second {
		t.Errorf("reconnect after a crash restart: p95 %v > 2 s (all: %v)", p95, crash)
	}
	for _, d := range goAwayBack {
		if d < -50*time.Millisecond || d > time.Second {
			t.Errorf("after go_away the robot came back %v from the announced delay", d)
		}
	}
	t.Logf("reconnects %v; go_away offsets %v", rc, goAwayBack)
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
