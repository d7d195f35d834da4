package uplink

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestSpec_2_1_PlainWSLoopbackOnly: ws:// is refused to any host but
// loopback.
func TestSpec_2_1_PlainWSLoopbackOnly(t *testing.T) {
	for url, ok := range map[string]bool{
		"ws://127.0.0.1:8765/v1/robot":     true,
		"ws://localhost/v1/robot":          true,
		"ws://[::1]:80/v1/robot":           true,
		"wss://gw.example.com/v1/robot":    true,
		"ws://gw.example.com/v1/robot":     false,
		"ws://10.0.0.5/v1/robot":           false,
		"ws://127.example.com/v1/robot":    false,
		"http://127.0.0.1:8765/v1/robot":   false,
		"wss://gw.example.com:443/v1/robo": true,
	} {
		err := (&Config{URL: url, DeviceID: "d"}).Validate()
		if (err == nil) != ok {
			t.Errorf("%s: err %v, want accepted=%v", url, err, ok)
		}
	}
}

// TestSpec_2_1_NoCredentialsInURL: a URL with user info or a token in the
// query is refused, and the error does not repeat the secret.
func TestSpec_2_1_NoCredentialsInURL(t *testing.T) {
	for _, url := range []string{"wss://robot:s3cret@gw.example.com/v1/robot", "wss://gw.example.com/v1/robot?token=s3cret"} {
		err := (&Config{URL: url, DeviceID: "d"}).Validate()
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: err %v, want a refusal that does not print the secret", url, err)
		}
	}
}

// headerGateway records the upgrade headers and the robot hello.
func headerGateway(t *testing.T) (*httptest.Server, chan http.Header, chan *protocol.RobotHello) {
	hdrs, hellos := make(chan http.Header, 4), make(chan *protocol.RobotHello, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hdrs <- req.Header.Clone()
		c, hello := acceptRobot(t, w, req)
		if c == nil {
			return
		}
		defer c.Close()
		hellos <- hello
		c.WriteMessage(websocket.TextMessage, goodHello("h", protocol.Keepalive{}))
		readUntilClosed(c, 3*time.Second)
	}))
	t.Cleanup(srv.Close)
	return srv, hdrs, hellos
}

// TestSpec_2_2_DeviceIDHeader: the upgrade carries the bearer token, the
// subprotocol and X-Robot-Device-Id.
func TestSpec_2_2_DeviceIDHeader(t *testing.T) {
	srv, hdrs, _ := headerGateway(t)
	runClient(t, wsURL(srv), func(c *Config) { c.DeviceID, c.Token = "rb-0042", "tok" })
	h := <-hdrs
	if h.Get("X-Robot-Device-Id") != "rb-0042" || h.Get("Authorization") != "Bearer tok" || h.Get("Sec-Websocket-Protocol") != protocol.Subprotocol {
		t.Fatalf("upgrade headers %v", h)
	}
}

// TestSpec_6_1_HelloDeviceIDEqualsHeader: device_id in the hello equals
// the X-Robot-Device-Id header.
func TestSpec_6_1_HelloDeviceIDEqualsHeader(t *testing.T) {
	srv, hdrs, hellos := headerGateway(t)
	runClient(t, wsURL(srv), func(c *Config) { c.DeviceID = "rb-0042" })
	if h, hello := <-hdrs, <-hellos; hello.DeviceID != h.Get("X-Robot-Device-Id") || hello.DeviceID != "rb-0042" {
		t.Fatalf("hello device_id %q, header %q", hello.DeviceID, h.Get("X-Robot-Device-Id"))
	}
}

// TestSpec_3_1_RobotHelloFirst: with control events already queued, the
// robot's first message is its hello, and it sends nothing else before the
// gateway's hello.
func TestSpec_3_1_RobotHelloFirst(t *testing.T) {
	var mu sync.Mutex
	var before []string
	conns := 0
	up := websocket.Upgrader{Subprotocols: []string{protocol.Subprotocol}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := up.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		mu.Lock()
		conns++
		n := conns
		mu.Unlock()
		if n > 1 {
			c.Close() // only the first connection is examined
			return
		}
		defer c.Close()
		_, first, err := c.ReadMessage()
		if err != nil {
			return
		}
		mu.Lock()
		before = append(before, string(first))
		mu.Unlock()
		// Anything else the robot sends in the next 300 ms came before our
		// hello.
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, data, err := c.ReadMessage(); err == nil {
			mu.Lock()
			before = append(before, string(data))
			mu.Unlock()
			return
		}
		// The deadline broke gorilla's reader; the test has what it needs.
	}))
	t.Cleanup(srv.Close)
	c, _, _ := runClient(t, wsURL(srv), nil)
	for i := range 3 {
		c.Emit(state("queued", i))
	}
	waitFor(t, "first connection", func() bool { mu.Lock(); defer mu.Unlock(); return len(before) > 0 })
	time.Sleep(400 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	m, err := protocol.DecodeFromRobot([]byte(before[0]))
	if _, ok := m.(*protocol.RobotHello); err != nil || !ok {
		t.Fatalf("first robot message %.100q (%v), want hello", before[0], err)
	}
	if len(before) > 1 {
		t.Fatalf("robot sent %.100q before the gateway hello", before[1])
	}
}

// TestSpec_3_1_RobotHelloAudio: the robot hello offers PCM16LE 16 kHz mono
// up and lists PCM16LE 24 kHz mono down.
func TestSpec_3_1_RobotHelloAudio(t *testing.T) {
	srv, _, hellos := headerGateway(t)
	runClient(t, wsURL(srv), nil)
	h := <-hellos
	if a := h.AudioUp; a.Format != "pcm16le" || a.SampleRate != 16000 || a.Channels != 1 {
		t.Fatalf("audio_up %+v", a)
	}
	found := false
	for _, a := range h.AudioDown {
		found = found || a.Format == "pcm16le" && a.SampleRate == 24000 && a.Channels == 1
	}
	if !found {
		t.Fatalf("audio_down %+v lacks PCM16LE 24 kHz mono", h.AudioDown)
	}
}

// TestSpec_4_5_MicFrameAtMostOneSecond: the uplink never sends a mic frame
// longer than 1 s: a longer one is refused (counted), and the configuration
// cannot allow one.
func TestSpec_4_5_MicFrameAtMostOneSecond(t *testing.T) {
	if err := (&Config{URL: "ws://127.0.0.1/v1/robot", DeviceID: "d", MicFrameMax: 16001}).Validate(); err == nil {
		t.Fatal("MicFrameMax over 1 s accepted")
	}
	reg := metrics.NewRegistry()
	c, err := New(Config{URL: "ws://127.0.0.1:1/v1/robot", DeviceID: "d", MicFrameMax: 16000}, clock.NewReal(), reg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.SendMic(&capture.Frame{Utterance: 1, Samples: make([]int16, 16001)}) {
		t.Fatal("a 16001-sample mic frame was queued")
	}
	if !c.SendMic(&capture.Frame{Utterance: 1, Samples: make([]int16, 16000)}) {
		t.Fatal("a 1 s mic frame was refused")
	}
	f, ok := c.mic.peek()
	if !ok || len(f) > protocol.MaxMicFrame {
		t.Fatalf("queued frame of %d bytes, limit %d", len(f), protocol.MaxMicFrame)
	}
}

// TestSpec_5_1_UnknownFieldsIgnored: a gateway message with fields the
// robot does not know is handled normally, without an error.
func TestSpec_5_1_UnknownFieldsIgnored(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	sess.SendRaw(websocket.TextMessage, []byte(`{"type":"skill","event_id":"gw-u-1","skill":"nod","args":{"times":2},"x_future":{"deep":[1,2]},"priority":"high"}`))
	waitFor(t, "skill handled", func() bool { return len(r.handler.types()) > 0 })
	time.Sleep(50 * time.Millisecond)
	if e := gatewayErrors(r.gw); len(e) != 0 {
		t.Fatalf("robot answered unknown fields with %+v", e[0])
	}
}

// TestSpec_5_3_ErrorRefSettles: an error whose ref names a queued event
// settles it: it is not re-sent after a reconnect.
func TestSpec_5_3_ErrorRefSettles(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	refuse := true
	s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
		c.WriteMessage(websocket.TextMessage, goodHello("s", protocol.Keepalive{}))
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			m, err := protocol.DecodeFromRobot(data)
			if err != nil {
				continue
			}
			st, ok := m.(*protocol.State)
			if !ok {
				continue
			}
			mu.Lock()
			seen = append(seen, st.EventID)
			ref := refuse
			mu.Unlock()
			if ref {
				e, _ := protocol.Marshal(&protocol.Error{Code: protocol.CodeBadMessage, Msg: "no", Ref: st.EventID})
				c.WriteMessage(websocket.TextMessage, e)
				time.Sleep(100 * time.Millisecond)
				return // drop the connection: an unsettled event would come back
			}
		}
	})
	c, _, _ := runClient(t, wsURL(s.srv), nil)
	c.Emit(state("refused", 1))
	waitFor(t, "refused", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 })
	mu.Lock()
	refuse = false
	mu.Unlock()
	waitFor(t, "reconnect", func() bool { return s.connections() >= 2 && c.Up() })
	c.Emit(state("next", 2))
	waitFor(t, "next state", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= 2 })
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] == seen[1] {
		t.Fatalf("states seen %v: the refused one was re-sent", seen)
	}
}

// TestSpec_5_3_DedupScopedToSession: a gateway event id seen in one
// session is acted on again in a new session (ids are per session), but a
// duplicate within the session is not.
func TestSpec_5_3_DedupScopedToSession(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	skills := func() int {
		n := 0
		for _, ty := range r.handler.types() {
			if ty == protocol.TypeSkill {
				n++
			}
		}
		return n
	}
	s1 := r.gw.Sessions()[0]
	s1.Send(&protocol.Skill{Meta: protocol.Meta{EventID: "gw-1-ev-1"}, Skill: "nod"})
	s1.Send(&protocol.Skill{Meta: protocol.Meta{EventID: "gw-1-ev-1"}, Skill: "nod"})
	waitFor(t, "one skill", func() bool { return skills() == 1 && r.reg.Value("robot_agent_uplink_duplicate_events_total") == 1 })
	s1.Abort()
	waitFor(t, "new session", func() bool { return r.reg.Value("robot_agent_uplink_connects_total") == 2 && r.client.Up() })
	r.gw.Sessions()[0].Send(&protocol.Skill{Meta: protocol.Meta{EventID: "gw-1-ev-1"}, Skill: "nod"})
	waitFor(t, "skill of the new session acted on", func() bool { return skills() == 2 })
}

// TestSpec_9_2_UnknownErrorCode: an error with a code the robot does not
// know is accepted (counted, logged), not answered, and the session goes
// on.
func TestSpec_9_2_UnknownErrorCode(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	sess.Send(&protocol.Error{Code: "x_future_code", Msg: "something new"})
	waitFor(t, "counted", func() bool { return r.reg.Value("robot_agent_uplink_gateway_errors_total") == 1 })
	sess.Send(&protocol.Skill{Skill: "after"})
	waitFor(t, "session goes on", func() bool { return len(r.handler.types()) >= 2 })
	if e := gatewayErrors(r.gw); len(e) != 0 {
		t.Fatalf("robot answered an error with %+v", e[0])
	}
}

// TestSpec_10_VersionEverywhere: the subprotocol, hello.protocol and the
// header version byte all say 1.
func TestSpec_10_VersionEverywhere(t *testing.T) {
	r := newRig(t, gateway.Config{NoEcho: true}, nil)
	r.gw.KeepPayloads(true)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	if sess.Hello.Protocol != 1 {
		t.Fatalf("hello protocol %d", sess.Hello.Protocol)
	}
	r.client.SendMic(&capture.Frame{Utterance: 1, Flag: protocol.FlagStart, Samples: make([]int16, 320)})
	waitFor(t, "mic frame", func() bool {
		for _, e := range r.gw.Events() {
			if e.Header != nil {
				return true
			}
		}
		return false
	})
	for _, e := range r.gw.Events() {
		if e.Header != nil && e.Header.Version != protocol.Version {
			t.Fatalf("header version %d", e.Header.Version)
		}
	}
	// The gateway accepted the upgrade only with robot-agent.v1 offered
	// (gateway.Server answers 400 otherwise), and the robot checked the echo.
	if protocol.Subprotocol != "robot-agent.v1" {
		t.Fatalf("subprotocol %q", protocol.Subprotocol)
	}
}

// TestSpec_10_UnknownTypeAndKind: an unknown control type gets
// unknown_type with ref, an unknown binary kind unsupported, and the
// session goes on.
func TestSpec_10_UnknownTypeAndKind(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	sess.SendRaw(websocket.TextMessage, []byte(`{"type":"hologram","event_id":"gw-h-1"}`))
	kind := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, 4))
	kind[1] = 42
	sess.SendRaw(websocket.BinaryMessage, kind)
	waitFor(t, "two errors", func() bool { return len(gatewayErrors(r.gw)) == 2 })
	e := gatewayErrors(r.gw)
	if e[0].Code != protocol.CodeUnknownType || e[0].Ref != "gw-h-1" || e[1].Code != protocol.CodeUnsupported {
		t.Fatalf("errors %+v %+v", e[0], e[1])
	}
	sess.Send(&protocol.Skill{Skill: "after"})
	waitFor(t, "session goes on", func() bool { return len(r.handler.types()) >= 1 })
	if r.reg.Value("robot_agent_uplink_connects_total") != 1 {
		t.Fatal("session replaced")
	}
}

// TestSpec_6_20_GoAwayAckedThenClosed: the robot acks go_away, then
// closes with 1000 "go_away", then reconnects after reconnect_after_ms.
func TestSpec_6_20_GoAwayAckedThenClosed(t *testing.T) {
	for i := range 5 {
		var mu sync.Mutex
		var got []string
		s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
			c.WriteMessage(websocket.TextMessage, goodHello("s", protocol.Keepalive{}))
			if n == 1 {
				c.WriteMessage(websocket.TextMessage, []byte(`{"type":"go_away","event_id":"gw-ga-1","reason":"deploy","reconnect_after_ms":50}`))
			}
			texts, _ := readUntilClosed(c, 3*time.Second)
			mu.Lock()
			got = append(got, texts...)
			mu.Unlock()
		})
		runClient(t, wsURL(s.srv), nil)
		waitFor(t, "reconnect", func() bool { return s.connections() >= 2 })
		mu.Lock()
		acked := false
		for _, m := range got {
			acked = acked || strings.Contains(m, `"ack"`) && strings.Contains(m, "gw-ga-1")
		}
		mu.Unlock()
		cf := s.closeFrames()
		if !acked || len(cf) == 0 || cf[0].Code != websocket.CloseNormalClosure || cf[0].Text != "go_away" {
			t.Fatalf("run %d: acked %v, close frames %v; want the ack, then close 1000 go_away", i, acked, cf)
		}
	}
}
