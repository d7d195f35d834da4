package uplink

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// scriptGW is a raw protocol gateway for control-lane tests: each
// connection gets a hello with the next session id, then runs script.
type scriptGW struct {
	srv      *httptest.Server
	sessions atomic.Int64
	script   func(n int, conn *websocket.Conn)
}

func newScriptGW(t *testing.T, script func(n int, conn *websocket.Conn)) *scriptGW {
	g := &scriptGW{script: script}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _ := acceptRobot(t, w, r)
		if conn == nil {
			return
		}
		defer conn.Close()
		n := int(g.sessions.Add(1))
		hello, _ := protocol.Marshal(&protocol.GatewayHello{Meta: protocol.Meta{Type: protocol.TypeHello}, Protocol: protocol.Version,
			SessionID: fmt.Sprintf("s%d", n),
			AudioUp:   protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20},
			AudioDown: protocol.AudioParams{Format: "pcm16le", SampleRate: 24000, Channels: 1}, Keepalive: protocol.Keepalive{IntervalMS: 1000, TimeoutMS: 5000}})
		if conn.WriteMessage(websocket.TextMessage, hello) != nil {
			return
		}
		g.script(n, conn)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *scriptGW) url() string { return wsURL(g.srv) }

func startClient(t *testing.T, url string, h ControlHandler, reg *metrics.Registry, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{URL: url, Token: "x", DeviceID: "r", BackoffBase: 10 * time.Millisecond, BackoffCap: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	return startTestClient(t, cfg, reg, testLogger(t), nil, h)
}

// readControl decodes robot control messages until f returns false.
func readControl(conn *websocket.Conn, f func(protocol.Message) bool) {
	for {
		mt, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if mt != websocket.TextMessage {
			continue
		}
		m, err := protocol.DecodeFromRobot(data)
		if err != nil {
			continue
		}
		if !f(m) {
			return
		}
	}
}

// An error with a ref settles the robot's event: it is not re-sent after a
// reconnect, and the rejection is counted by code.
func TestErrorWithRefSettlesEvent(t *testing.T) {
	var mu sync.Mutex
	sent := map[int][]string{} // session → event ids received
	g := newScriptGW(t, func(n int, conn *websocket.Conn) {
		readControl(conn, func(m protocol.Message) bool {
			id := m.Envelope().EventID
			if id == "" {
				return true
			}
			mu.Lock()
			sent[n] = append(sent[n], id)
			k := len(sent[n])
			mu.Unlock()
			if n == 1 {
				// Reject the first, ack the second, leave the third
				// unsettled, then drop the connection.
				switch k {
				case 1:
					e, _ := protocol.Marshal(&protocol.Error{Meta: protocol.Meta{Type: protocol.TypeError}, Code: protocol.CodeRateLimited, Msg: "slow down", Ref: id})
					conn.WriteMessage(websocket.TextMessage, e)
				case 2:
					a, _ := protocol.Marshal(&protocol.Ack{Meta: protocol.Meta{Type: protocol.TypeAck, EventID: id}})
					conn.WriteMessage(websocket.TextMessage, a)
				case 3:
					return false
				}
			}
			return true
		})
	})
	reg := metrics.NewRegistry()
	c := startClient(t, g.url(), nil, reg, nil)
	for i := 1; i <= 3; i++ {
		if err := c.Emit(state("s", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "second session to receive the resend", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sent[2]) >= 1
	})
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	got := append([]string(nil), sent[2]...)
	mu.Unlock()
	if len(got) != 1 || !strings.HasSuffix(got[0], "-3") {
		t.Fatalf("resent after reconnect: %v, want only r-3 (r-1 was settled by error, r-2 by ack)", got)
	}
	if v := reg.Value("robot_agent_control_rejected_rate_limited_total"); v != 1 {
		t.Fatalf("rejections by code rate_limited = %d, want 1", v)
	}
	if v := reg.Value("robot_agent_control_rejected_total"); v != 1 {
		t.Fatalf("rejections = %d, want 1", v)
	}
	if c.Outbox().Len() != 1 {
		t.Fatalf("outbox holds %d, want 1 (r-3)", c.Outbox().Len())
	}
}

type decisionRec struct {
	mu  sync.Mutex
	ids []string
}

func (d *decisionRec) HandleControl(_ context.Context, m protocol.Message) {
	d.mu.Lock()
	d.ids = append(d.ids, m.Envelope().EventID+"/"+m.Envelope().Type)
	d.mu.Unlock()
}

func (d *decisionRec) n() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.ids) }

// A restarted gateway (new session) reuses its event ids: the robot acts on
// each again. Within one session a duplicate is acked but not acted on.
func TestDedupScopedToGatewaySession(t *testing.T) {
	var acks atomic.Int64
	g := newScriptGW(t, func(n int, conn *websocket.Conn) {
		if n > 3 {
			time.Sleep(time.Hour)
			return
		}
		// Every session — a restarted gateway — numbers from 1 again, and
		// sends the first decision twice.
		for _, k := range []int{1, 1, 2} {
			m, _ := protocol.Marshal(&protocol.Arbiter{Meta: protocol.Meta{Type: protocol.TypeArbiter, EventID: fmt.Sprintf("gw-%d", k)},
				Ref: fmt.Sprintf("r-%d", k), Decision: protocol.DecisionDelegate})
			conn.WriteMessage(websocket.TextMessage, m)
		}
		readControl(conn, func(m protocol.Message) bool {
			if _, ok := m.(*protocol.Ack); ok {
				if acks.Add(1)%3 == 0 {
					return false // all three answered: "restart"
				}
			}
			return true
		})
	})
	reg := metrics.NewRegistry()
	h := &decisionRec{}
	startClient(t, g.url(), h, reg, nil)
	waitFor(t, "decisions of three sessions", func() bool { return h.n() >= 6 && acks.Load() >= 9 })
	time.Sleep(50 * time.Millisecond)
	if h.n() != 6 {
		t.Fatalf("decisions acted on: %v, want 6 (2 per session)", h.ids)
	}
	if d := reg.Value("robot_agent_uplink_duplicate_events_total"); d != 3 {
		t.Fatalf("duplicates = %d, want 3 (one per session)", d)
	}
	if a := acks.Load(); a != 9 {
		t.Fatalf("acks = %d, want 9 (duplicates are acked too)", a)
	}
}

// 40 000 reliable messages as fast as the gateway can write them: every one
// is acked (the old 256-slot shared queue dropped thousands).
func TestAckFloodNoAckDropped(t *testing.T) {
	const n = 40000
	var acked atomic.Int64
	seen := make([]atomic.Bool, n+1)
	var dupAcks atomic.Int64
	g := newScriptGW(t, func(_ int, conn *websocket.Conn) {
		go func() {
			for i := 1; i <= n; i++ {
				m, _ := protocol.Marshal(&protocol.KeyframeRequest{Meta: protocol.Meta{Type: "keyframe_request", EventID: fmt.Sprintf("k-%d", i)}})
				if conn.WriteMessage(websocket.TextMessage, m) != nil {
					return
				}
			}
		}()
		readControl(conn, func(m protocol.Message) bool {
			if a, ok := m.(*protocol.Ack); ok {
				var k int
				fmt.Sscanf(a.EventID, "k-%d", &k)
				if k >= 1 && k <= n {
					if seen[k].Swap(true) {
						dupAcks.Add(1)
					} else {
						acked.Add(1)
					}
				}
			}
			return true
		})
	})
	reg := metrics.NewRegistry()
	// A slow-ish handler does not matter: acks are sent on receipt.
	startClient(t, g.url(), &decisionRec{}, reg, func(c *Config) { c.AnswerQueue = 1024 })
	deadline := time.Now().Add(60 * time.Second)
	for acked.Load() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := acked.Load(); got != n {
		t.Fatalf("acked %d of %d messages (answers discarded: %d)", got, n, reg.Value("robot_agent_uplink_answers_discarded_total"))
	}
	if d := dupAcks.Load(); d != 0 {
		t.Fatalf("%d messages acked twice", d)
	}
	if v := reg.Value("robot_agent_uplink_ephemeral_dropped_total"); v != 0 {
		t.Logf("ephemeral (progress) drops: %d", v)
	}
}

// The embedded gateway's planned shutdown sends go_away with a delay; the
// robot leaves and comes back at that delay, not at its backoff.
func TestGatewayGoAwayReconnectAtAnnouncedDelay(t *testing.T) {
	r := newRig(t, gateway.Config{}, func(c *Config) { c.BackoffBase = 5 * time.Second; c.BackoffCap = 10 * time.Second })
	waitFor(t, "session", r.client.Up)
	const after = 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if n := r.gw.GoAway(ctx, "deploy", after, 0); n != 1 {
		t.Fatalf("GoAway told %d robots, want 1", n)
	}
	if ctx.Err() != nil {
		t.Fatal("robot did not leave after go_away")
	}
	waitFor(t, "second session", func() bool { return r.reg.Value("robot_agent_uplink_connects_total") == 2 })
	back := time.Since(start)
	if back < after || back > after+time.Second {
		t.Fatalf("robot back after %v, want at the announced %v (its own backoff base is 5 s)", back, after)
	}
	t.Logf("go_away %v: robot back after %v", after, back)
}
