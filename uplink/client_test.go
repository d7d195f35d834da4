package uplink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// fakeTTS records what the read pump hands to the jitter buffer.
type fakeTTS struct {
	mu         sync.Mutex
	pcm        map[uint32][]byte
	ended      []uint32
	interrupts []uint32
	sessions   int
}

func (f *fakeTTS) PushPCM(id uint32, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pcm == nil {
		f.pcm = map[uint32][]byte{}
	}
	f.pcm[id] = append(f.pcm[id], b...)
	return nil
}
func (f *fakeTTS) EndResponse(id uint32) { f.mu.Lock(); f.ended = append(f.ended, id); f.mu.Unlock() }
func (f *fakeTTS) Interrupt(id uint32) uint32 {
	f.mu.Lock()
	f.interrupts = append(f.interrupts, id)
	f.mu.Unlock()
	return id
}
func (f *fakeTTS) ResetSession() { f.mu.Lock(); f.sessions++; f.mu.Unlock() }

type recHandler struct {
	mu   sync.Mutex
	msgs []protocol.Message
}

func (h *recHandler) HandleControl(_ context.Context, m protocol.Message) {
	h.mu.Lock()
	h.msgs = append(h.msgs, m)
	h.mu.Unlock()
}

func (h *recHandler) types() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, m := range h.msgs {
		out = append(out, m.Envelope().Type)
	}
	return out
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		w := &tWriter{t: t}
		t.Cleanup(func() { w.done.Store(true) })
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// tWriter sends log lines to t.Log until the test ends (goroutines may
// still log after that).
type tWriter struct {
	t    *testing.T
	done atomic.Bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

type rig struct {
	gw      *gateway.Server
	srv     *httptest.Server
	client  *Client
	tts     *fakeTTS
	handler *recHandler
	reg     *metrics.Registry
	cancel  context.CancelFunc
	done    chan error
}

func newRig(t *testing.T, gcfg gateway.Config, mod func(*Config)) *rig {
	t.Helper()
	clk := clock.NewReal()
	log := testLogger(t)
	gw, err := gateway.New(gcfg, clk, metrics.NewRegistry(), log, gateway.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	r := &rig{gw: gw, srv: srv, tts: &fakeTTS{}, handler: &recHandler{}, reg: metrics.NewRegistry(), done: make(chan error, 1)}
	cfg := Config{URL: wsURL(srv), Token: "t0ken", DeviceID: "robot-1", BackoffBase: 20 * time.Millisecond, BackoffCap: 200 * time.Millisecond,
		Hello: protocol.RobotHello{AgentVersion: "test", BootID: "boot",
			AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20}}}
	if mod != nil {
		mod(&cfg)
	}
	r.client, err = New(cfg, clk, r.reg, log, r.tts, r.handler)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.client.Run(ctx) }()
	t.Cleanup(func() {
		r.stop(t)
		srv.Close()
	})
	return r
}

func (r *rig) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("client did not stop within 5 s")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func gatewayStates(gw *gateway.Server) []string {
	var out []string
	for _, e := range gw.Events() {
		if s, ok := e.Msg.(*protocol.State); ok {
			out = append(out, s.EventID)
		}
	}
	return out
}

func TestControlLaneDeliveredAndAcked(t *testing.T) {
	r := newRig(t, gateway.Config{Token: "t0ken"}, nil)
	waitFor(t, "session", r.client.Up)
	for i := 0; i < 20; i++ {
		if err := r.client.Emit(state("button", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "all acked", func() bool { return r.client.Outbox().Len() == 0 })
	got := gatewayStates(r.gw)
	if len(got) != 20 {
		t.Fatalf("gateway got %d states, want 20", len(got))
	}
	for i, id := range got {
		if id != fmt.Sprintf("boot-%d", i+1) {
			t.Fatalf("state %d has event_id %s: order broken", i, id)
		}
	}
}

func TestControlLaneSurvivesDisconnect(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	r.client.Emit(state("a", 1))
	waitFor(t, "first ack", func() bool { return r.client.Outbox().Len() == 0 })
	// Drop the link, emit while it is down, and check everything arrives
	// in order after the reconnect.
	sess.Close("test drop")
	waitFor(t, "link down", func() bool { return r.reg.Value("robot_agent_uplink_disconnects_total") >= 1 })
	for i := 2; i <= 6; i++ {
		r.client.Emit(state("a", i))
	}
	waitFor(t, "reconnect and acks", func() bool { return r.client.Up() && r.client.Outbox().Len() == 0 })
	got := gatewayStates(r.gw)
	seen := map[string]bool{}
	var firsts []string
	for _, id := range got {
		if !seen[id] {
			seen[id] = true
			firsts = append(firsts, id)
		}
	}
	want := []string{"boot-1", "boot-2", "boot-3", "boot-4", "boot-5", "boot-6"}
	if !slices.Equal(firsts, want) {
		t.Fatalf("gateway saw %v, want every event in order %v", firsts, want)
	}
	if r.reg.Value("robot_agent_uplink_connects_total") < 2 {
		t.Fatal("no reconnect counted")
	}
}

func TestControlLaneQueuedBeforeGatewayExists(t *testing.T) {
	// The gateway is not listening yet: messages queue, then flow in order.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	clk := clock.NewReal()
	reg := metrics.NewRegistry()
	c, err := New(Config{URL: "ws://" + addr + gateway.Path, Token: "x", DeviceID: "r", BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond,
		Hello: protocol.RobotHello{BootID: "b", AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1}}},
		clk, reg, testLogger(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for i := 0; i < 3; i++ {
		c.Emit(state("early", i))
	}
	waitFor(t, "dial errors", func() bool { return reg.Value("robot_agent_uplink_dial_errors_total") >= 2 })
	gw, _ := gateway.New(gateway.Config{}, clk, metrics.NewRegistry(), testLogger(t), gateway.Hooks{})
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("could not re-listen on %s: %v", addr, err)
	}
	hs := &http.Server{Handler: gw}
	go hs.Serve(ln)
	defer hs.Close()
	waitFor(t, "delivery", func() bool { return c.Outbox().Len() == 0 })
	if got := gatewayStates(gw); !slices.Equal(got, []string{"b-1", "b-2", "b-3"}) {
		t.Fatalf("gateway got %v", got)
	}
}

func TestDownlinkTTSBinaryAndBase64(t *testing.T) {
	for _, mode := range []string{gateway.TTSBinary, gateway.TTSBase64} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, gateway.Config{TTSMode: mode, Speed: 50}, nil)
			waitFor(t, "session", r.client.Up)
			sess := r.gw.Sessions()[0]
			pcm := make([]int16, 24000/2)
			for i := range pcm {
				pcm[i] = int16(i*7 - 3000)
			}
			id := sess.StreamTTS(context.Background(), pcm)
			waitFor(t, "end of response", func() bool {
				r.tts.mu.Lock()
				defer r.tts.mu.Unlock()
				return len(r.tts.ended) > 0
			})
			r.tts.mu.Lock()
			got := r.tts.pcm[id]
			r.tts.mu.Unlock()
			if len(got) != 2*len(pcm) {
				t.Fatalf("got %d bytes, want %d", len(got), 2*len(pcm))
			}
			for i := range pcm {
				if v := int16(uint16(got[2*i]) | uint16(got[2*i+1])<<8); v != pcm[i] {
					t.Fatalf("sample %d = %d, want %d", i, v, pcm[i])
				}
			}
		})
	}
}

func TestInterruptReachesSinkAndIsAcked(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	sess.Send(&protocol.Interrupt{ResponseID: 3, Reason: "test"})
	waitFor(t, "interrupt", func() bool {
		r.tts.mu.Lock()
		defer r.tts.mu.Unlock()
		return len(r.tts.interrupts) == 1 && r.tts.interrupts[0] == 3
	})
	waitFor(t, "interrupt reaches the control handler", func() bool {
		return len(r.handler.types()) == 1 && r.handler.types()[0] == protocol.TypeInterrupt
	})
}

// TestBadInputFromGateway sends every kind of malformed downlink message
// and checks: an error goes back naming the problem, a counter moves, the
// session stays up, and the control lane loses nothing.
func TestBadInputFromGateway(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	truncated := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, 8))[:10]
	lying := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, 8))
	lying[20] = 200 // length field larger than the frame
	oversized := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, protocol.MaxTTSFrame))
	cases := []struct {
		name    string
		mt      int
		data    []byte
		code    string
		counter string
	}{
		{"malformed json", websocket.TextMessage, []byte(`{"type":"asr","text":`), protocol.CodeBadMessage, "robot_agent_uplink_bad_messages_total"},
		{"unknown type", websocket.TextMessage, []byte(`{"type":"dance_party","event_id":"x1"}`), protocol.CodeUnknownType, "robot_agent_uplink_unknown_types_total"},
		{"wrong field type", websocket.TextMessage, []byte(`{"type":"tts","response_id":"seven","audio":""}`), protocol.CodeBadMessage, "robot_agent_uplink_bad_messages_total"},
		{"invalid base64", websocket.TextMessage, []byte(`{"type":"tts","response_id":1,"audio":"!!!not base64"}`), protocol.CodeBadMessage, "robot_agent_uplink_bad_messages_total"},
		{"wrong sample rate", websocket.TextMessage, []byte(`{"type":"tts","response_id":1,"audio":"AAAA","sample_rate":16000}`), protocol.CodeUnsupported, "robot_agent_uplink_bad_messages_total"},
		{"invalid utf8", websocket.TextMessage, []byte("{\"type\":\"asr\",\"text\":\"\xff\xfe\"}"), protocol.CodeBadMessage, "robot_agent_uplink_bad_messages_total"},
		{"truncated header", websocket.BinaryMessage, truncated, protocol.CodeBadFrame, "robot_agent_uplink_bad_frames_total"},
		{"length beyond frame", websocket.BinaryMessage, lying, protocol.CodeBadFrame, "robot_agent_uplink_bad_frames_total"},
		{"oversized frame", websocket.BinaryMessage, oversized, protocol.CodeTooLarge, "robot_agent_uplink_bad_frames_total"},
		{"mic frame downlink", websocket.BinaryMessage, protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio}, nil), protocol.CodeBadFrame, "robot_agent_uplink_bad_frames_total"},
		{"mic frame downlink with stream", websocket.BinaryMessage, protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Stream: 1}, nil), protocol.CodeUnsupported, "robot_agent_uplink_bad_frames_total"},
	}
	errorsBefore := func() int {
		n := 0
		for _, e := range r.gw.Events() {
			if _, ok := e.Msg.(*protocol.Error); ok {
				n++
			}
		}
		return n
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := r.reg.Value(tc.counter)
			nerr := errorsBefore()
			// A control message queued right before the bad one must still
			// be delivered (nothing of the control lane lost).
			r.client.Emit(state("during_"+strings.ReplaceAll(tc.name, " ", "_"), 1))
			if err := sess.SendRaw(tc.mt, tc.data); err != nil {
				t.Fatal(err)
			}
			sess.Send(&protocol.Skill{Skill: "after_" + strings.ReplaceAll(tc.name, " ", "_")})
			waitFor(t, "counter "+tc.counter, func() bool { return r.reg.Value(tc.counter) == before+1 })
			waitFor(t, "error reply at gateway", func() bool { return errorsBefore() == nerr+1 })
			var last *protocol.Error
			for _, e := range r.gw.Events() {
				if m, ok := e.Msg.(*protocol.Error); ok {
					last = m
				}
			}
			if last.Code != tc.code {
				t.Fatalf("error code %q, want %q (msg %q)", last.Code, tc.code, last.Msg)
			}
			if !strings.HasPrefix(last.Msg, "protocol:") && !strings.Contains(last.Msg, "protocol:") {
				t.Fatalf("error message %q does not say what was wrong", last.Msg)
			}
			waitFor(t, "skill after bad input handled", func() bool {
				ts := r.handler.types()
				return len(ts) > 0 && ts[len(ts)-1] == protocol.TypeSkill
			})
			waitFor(t, "control lane drained", func() bool { return r.client.Outbox().Len() == 0 })
		})
	}
	if n := r.reg.Value("robot_agent_uplink_connects_total"); n != 1 {
		t.Fatalf("connects = %d: bad input must not end the session", n)
	}
	if len(r.gw.Sessions()) != 1 || r.gw.Sessions()[0] != sess {
		t.Fatal("session was replaced")
	}
}

func TestKeepaliveDetectsDeadLink(t *testing.T) {
	// A gateway that says hello and then never reads again (so never
	// answers pings).
	up := websocket.Upgrader{Subprotocols: []string{protocol.Subprotocol}}
	var mu sync.Mutex
	sessions := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := up.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.ReadMessage()
		mu.Lock()
		sessions++
		mu.Unlock()
		b, _ := protocol.Marshal(&protocol.GatewayHello{Protocol: 1, SessionID: "dead",
			AudioDown: protocol.AudioParams{Format: "pcm16le", SampleRate: 24000, Channels: 1},
			Keepalive: protocol.Keepalive{IntervalMS: 50, TimeoutMS: 200}})
		c.WriteMessage(websocket.TextMessage, b)
		time.Sleep(3 * time.Second)
	}))
	defer srv.Close()
	reg := metrics.NewRegistry()
	c, err := New(Config{URL: wsURL(srv), Token: "x", DeviceID: "r", BackoffBase: 10 * time.Millisecond,
		Hello: protocol.RobotHello{AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1}}},
		clock.NewReal(), reg, testLogger(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	waitFor(t, "keepalive timeout", func() bool { return reg.Value("robot_agent_uplink_keepalive_timeouts_total") >= 1 })
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("dead link detected after %v, want about the 200 ms timeout", el)
	}
	waitFor(t, "reconnect attempt", func() bool { mu.Lock(); defer mu.Unlock(); return sessions >= 2 })
}

func TestGoAwayReconnects(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	r.gw.Sessions()[0].Send(&protocol.GoAway{Reason: "deploy", ReconnectAfterMS: 30})
	waitFor(t, "second session", func() bool { return r.reg.Value("robot_agent_uplink_connects_total") == 2 && r.client.Up() })
	if r.reg.Value("robot_agent_uplink_go_aways_total") != 1 {
		t.Fatal("go_away not counted")
	}
	r.tts.mu.Lock()
	defer r.tts.mu.Unlock()
	if r.tts.sessions != 2 {
		t.Fatalf("jitter buffer told of %d sessions, want 2", r.tts.sessions)
	}
}

func TestUnauthorized(t *testing.T) {
	r := newRig(t, gateway.Config{Token: "right"}, func(c *Config) { c.Token = "wrong" })
	waitFor(t, "dial error", func() bool { return r.reg.Value("robot_agent_uplink_dial_errors_total") >= 1 })
	if r.client.Up() {
		t.Fatal("session established with a wrong token")
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		url, dev, want string
	}{
		{"http://127.0.0.1/v1/robot", "r", "not a ws:// or wss:// URL"},
		{"ws://gateway.example.com/v1/robot", "r", "plain ws:// to a non-loopback host"},
		{"wss://gw.example.com/v1/robot?token=abc", "r", "carries credentials"},
		{"wss://gw.example.com/v1/robot", "", "device id is empty"},
	}
	for _, tc := range cases {
		c := Config{URL: tc.url, DeviceID: tc.dev}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%q, %q) = %v, want error containing %q", tc.url, tc.dev, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "abc") {
			t.Errorf("error leaks the token: %v", err)
		}
	}
	for _, ok := range []Config{
		{URL: "wss://gw.example.com/v1/robot", DeviceID: "r"},
		{URL: "ws://127.0.0.1:8765/v1/robot", DeviceID: "r"},
		{URL: "ws://[::1]:8765/v1/robot", DeviceID: "r"},
		{URL: "ws://192.168.1.5:8765/v1/robot", DeviceID: "r", AllowInsecureWS: true},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%q, allow_insecure_ws=%v) = %v", ok.URL, ok.AllowInsecureWS, err)
		}
	}
	bad := Config{URL: "ws://127.0.0.1.example.com/v1/robot", DeviceID: "r"}
	if err := bad.Validate(); err == nil {
		t.Error("a host named like a loopback address passed as loopback")
	}
	_ = errors.New
}

// TestNoTokenNoHeader: without a token the client sends no Authorization
// header; a gateway that asks for none accepts it, one that asks for one
// answers 401 and the error says how to configure the token.
func TestNoTokenNoHeader(t *testing.T) {
	var sawAuth atomic.Bool
	gw, err := gateway.New(gateway.Config{}, clock.NewReal(), metrics.NewRegistry(), testLogger(t), gateway.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "" {
			sawAuth.Store(true)
		}
		gw.ServeHTTP(w, req)
	}))
	defer srv.Close()
	reg := metrics.NewRegistry()
	c, err := New(Config{URL: wsURL(srv), DeviceID: "r",
		Hello: protocol.RobotHello{AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1}}},
		clock.NewReal(), reg, testLogger(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	waitFor(t, "session without a token", c.Up)
	cancel()
	<-done
	if sawAuth.Load() {
		t.Fatal("client sent an Authorization header without a token")
	}

	r := newRig(t, gateway.Config{Token: "right"}, func(c *Config) { c.Token = "" })
	waitFor(t, "dial error", func() bool { return r.reg.Value("robot_agent_uplink_dial_errors_total") >= 1 })
	if r.client.Up() {
		t.Fatal("session established without the token the gateway asks for")
	}
	cc := r.client.cfg
	if _, err := r.client.dial(context.Background()); err == nil || !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "set gateway.token_file") {
		t.Fatalf("dial without a token: %v (config %q)", err, cc.URL)
	}
}

// TestControlLaneResentAfterAbruptDrop: the gateway withholds the ack of one
// message and the connection dies without a close frame; after the
// reconnect the robot sends that message again and nothing is lost.
func TestControlLaneResentAfterAbruptDrop(t *testing.T) {
	clk := clock.NewReal()
	var withheld atomic.Bool
	var gw *gateway.Server
	hooks := gateway.Hooks{BeforeAck: func(s *gateway.Session, m protocol.Message) bool {
		if st, ok := m.(*protocol.State); ok && st.EventID == "boot-3" && withheld.CompareAndSwap(false, true) {
			go s.Abort()
			return false
		}
		return true
	}}
	gw, err := gateway.New(gateway.Config{}, clk, metrics.NewRegistry(), testLogger(t), hooks)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	reg := metrics.NewRegistry()
	c, err := New(Config{URL: wsURL(srv), Token: "x", DeviceID: "r", BackoffBase: 20 * time.Millisecond,
		Hello: protocol.RobotHello{BootID: "boot", AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1}}},
		clk, reg, testLogger(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "session", c.Up)
	for i := 1; i <= 8; i++ {
		c.Emit(state("s", i))
	}
	waitFor(t, "everything acked after the reconnect", func() bool {
		return reg.Value("robot_agent_uplink_connects_total") >= 2 && c.Outbox().Len() == 0
	})
	count := map[string]int{}
	for _, id := range gatewayStates(gw) {
		count[id]++
	}
	for i := 1; i <= 8; i++ {
		if count[fmt.Sprintf("boot-%d", i)] == 0 {
			t.Fatalf("boot-%d never reached the gateway (%v)", i, count)
		}
	}
	if count["boot-3"] < 2 || reg.Value("robot_agent_control_resent_total") < 1 {
		t.Fatalf("the unacked message was not resent: seen %d times, resent counter %d", count["boot-3"], reg.Value("robot_agent_control_resent_total"))
	}
}
