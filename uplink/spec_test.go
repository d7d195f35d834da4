package uplink

// Robot-side conformance tests, named after the section of
// docs/protocol.md whose MUST/SHOULD they check (the conformance map in
// §16 lists them).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// scripted is a test gateway that plays a script per connection: it
// upgrades, reads the robot hello and hands the connection to the script.
type scripted struct {
	srv *httptest.Server

	mu     sync.Mutex
	hellos []protocol.RobotHello
	closes []websocket.CloseError // close frames received from the robot
}

func newScripted(t *testing.T, script func(n int, c *websocket.Conn, s *scripted)) *scripted {
	t.Helper()
	s := &scripted{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, hello := acceptRobot(t, w, req)
		if c == nil {
			return
		}
		defer c.Close()
		c.SetCloseHandler(func(code int, text string) error {
			s.mu.Lock()
			s.closes = append(s.closes, websocket.CloseError{Code: code, Text: text})
			s.mu.Unlock()
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
			return nil
		})
		s.mu.Lock()
		s.hellos = append(s.hellos, *hello)
		n := len(s.hellos)
		s.mu.Unlock()
		script(n, c, s)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) closeFrames() []websocket.CloseError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]websocket.CloseError(nil), s.closes...)
}

func (s *scripted) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hellos)
}

func goodHello(id string, ka protocol.Keepalive) []byte {
	b, _ := protocol.Marshal(&protocol.GatewayHello{Protocol: 1, SessionID: id,
		AudioDown: protocol.AudioParams{Format: "pcm16le", SampleRate: 24000, Channels: 1}, Keepalive: ka})
	return b
}

// readUntilClosed reads (and answers pings) until the connection ends and
// returns the messages read.
func readUntilClosed(c *websocket.Conn, d time.Duration) (texts []string, err error) {
	c.SetReadDeadline(time.Now().Add(d))
	for {
		mt, data, err := c.ReadMessage()
		if err != nil {
			return texts, err
		}
		if mt == websocket.TextMessage {
			texts = append(texts, string(data))
		}
	}
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func runClient(t *testing.T, url string, mod func(*Config)) (*Client, *metrics.Registry, *logBuf) {
	t.Helper()
	return runClientWith(t, url, mod, nil)
}

// runClientWith is runClient with a link observer added before Run.
func runClientWith(t *testing.T, url string, mod func(*Config), obs LinkObserver) (*Client, *metrics.Registry, *logBuf) {
	t.Helper()
	reg := metrics.NewRegistry()
	logs := &logBuf{}
	cfg := Config{URL: url, Token: "x", DeviceID: "robot-1", BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond,
		HandshakeTimeout: 2 * time.Second,
		Hello:            protocol.RobotHello{AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20}}}
	if mod != nil {
		mod(&cfg)
	}
	c := newTestClient(t, cfg, reg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), &fakeTTS{}, &recHandler{})
	if obs != nil {
		c.AddObserver(obs)
	}
	runUntilCleanup(t, c)
	return c, reg, logs
}

// TestSpec_3_3_BootID: the boot id carries 128 random bits (32 hex
// digits), differs per process start, and prefixes every event id.
func TestSpec_3_3_BootID(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 100 {
		id := NewBootID()
		if !hex32.MatchString(id) || seen[id] {
			t.Fatalf("boot id %q: want 32 fresh hex digits", id)
		}
		seen[id] = true
	}
	r := newRig(t, gateway.Config{}, func(c *Config) { c.Hello.BootID = "" })
	waitFor(t, "session", r.client.Up)
	boot := r.gw.Sessions()[0].Hello.BootID
	if !hex32.MatchString(boot) || boot != r.client.BootID() {
		t.Fatalf("hello boot_id %q (client %q), want 32 hex digits", boot, r.client.BootID())
	}
	id, err := r.client.EmitID(state("pose", 1))
	if err != nil || id != boot+"-1" {
		t.Fatalf("first event id %q (%v), want %s-1", id, err, boot)
	}
}

// TestSpec_3_9_RobotHelloV11: the robot says it speaks 1.1 and offers its
// audio formats, keeping the v1 fields for v1.0 gateways.
func TestSpec_3_9_RobotHelloV11(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	h := r.gw.Sessions()[0].Hello
	if h.Minor != protocol.MinorVersion || h.Audio == nil {
		t.Fatalf("hello protocol_minor=%d audio=%v, want %d and an offer", h.Minor, h.Audio, protocol.MinorVersion)
	}
	pcmUp := protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20}
	pcmDown := protocol.AudioParams{Format: "pcm16le", SampleRate: 24000, Channels: 1}
	if h.AudioUp != pcmUp || len(h.AudioDown) == 0 || h.AudioDown[0] != pcmDown {
		t.Fatalf("v1 fields audio_up=%v audio_down=%v", h.AudioUp, h.AudioDown)
	}
	if len(h.Audio.Up) == 0 || h.Audio.Up[0] != pcmUp || len(h.Audio.Down) == 0 || h.Audio.Down[0] != pcmDown {
		t.Fatalf("audio offer %+v lacks the PCM formats", h.Audio)
	}
}

// TestSpec_4_3_FrameErrorCodes: a rejected binary frame gets the code of
// the table in 4.3, not bad_frame for everything.
func TestSpec_4_3_FrameErrorCodes(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	tts := func(h protocol.Header, n int) []byte {
		h.Kind, h.Stream = protocol.KindTTSAudio, 1
		return protocol.AppendFrame(nil, h, make([]byte, n))
	}
	v2 := tts(protocol.Header{}, 4)
	v2[0] = 2
	kind9 := tts(protocol.Header{}, 4)
	kind9[1] = 9
	cases := []struct {
		name string
		data []byte
		code string
	}{
		{"too large", tts(protocol.Header{}, protocol.MaxTTSFrame), protocol.CodeTooLarge},
		{"header version 2", v2, protocol.CodeUnsupported},
		{"unknown kind", kind9, protocol.CodeUnsupported},
		{"video kind downlink", protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindVideo, Flag: protocol.FlagImage}, []byte{1}), protocol.CodeUnsupported},
		{"bad flag", tts(protocol.Header{Flag: 7}, 4), protocol.CodeBadFrame},
		{"odd length", tts(protocol.Header{}, 3), protocol.CodeBadFrame},
	}
	for _, tc := range cases {
		n := len(gatewayErrors(r.gw))
		if err := sess.SendRaw(websocket.BinaryMessage, tc.data); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tc.name+" error", func() bool { return len(gatewayErrors(r.gw)) > n })
		if e := gatewayErrors(r.gw)[n]; e.Code != tc.code {
			t.Errorf("%s: code %q, want %q (%s)", tc.name, e.Code, tc.code, e.Msg)
		}
	}
}

func gatewayErrors(gw *gateway.Server) []*protocol.Error {
	var out []*protocol.Error
	for _, e := range gw.Events() {
		if m, ok := e.Msg.(*protocol.Error); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestSpec_2_4_Close1009Delivered: a message over the robot's read limit
// makes it close with 1009, and the gateway really receives that close
// frame (the robot does not reset the TCP connection under it).
func TestSpec_2_4_Close1009Delivered(t *testing.T) {
	got := make(chan error, 8)
	s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
		if n > 3 {
			readUntilClosed(c, 2*time.Second)
			return
		}
		c.SetCloseHandler(nil) // let ReadMessage return the CloseError
		c.WriteMessage(websocket.TextMessage, goodHello("big", protocol.Keepalive{}))
		// Like a single-threaded gateway: write the whole message, then
		// read. The robot must keep reading after its close frame, or
		// this write fails on a reset and the close frame is lost.
		big := make([]byte, 16*protocol.MaxDownlinkHard)
		if err := c.WriteMessage(websocket.BinaryMessage, big); err != nil {
			got <- fmt.Errorf("gateway write failed (the robot reset the connection under it): %w", err)
			return
		}
		_, err := readUntilClosed(c, 3*time.Second)
		got <- err
	})
	_, reg, _ := runClient(t, wsURL(s.srv), nil)
	for i := range 3 {
		select {
		case err := <-got:
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
				t.Fatalf("connection %d: gateway saw %v, want close 1009", i+1, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("robot did not close the connection")
		}
	}
	if reg.Value("robot_agent_uplink_connects_total") < 3 {
		t.Fatal("robot did not reconnect after 1009")
	}
}

// TestSpec_9_1_ErrorReplyRateLimit: a flood of bad input gets at most about
// 10 error replies a second; the rest are only counted. Errors that settle
// a reliable message (with ref) are never suppressed.
func TestSpec_9_1_ErrorReplyRateLimit(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	start := time.Now()
	const flood = 300
	for range flood {
		sess.SendRaw(websocket.BinaryMessage, []byte{1, 2, 3})
	}
	waitFor(t, "flood counted", func() bool { return r.reg.Value("robot_agent_uplink_bad_frames_total") == flood })
	el := time.Since(start)
	time.Sleep(100 * time.Millisecond)
	sent := len(gatewayErrors(r.gw))
	allowed := errorReplyBurst + int(el.Seconds()*errorReplyRate) + 2
	if sent > allowed || sent < errorReplyBurst {
		t.Fatalf("%d error replies to %d bad frames in %v, want %d..%d", sent, flood, el, errorReplyBurst, allowed)
	}
	if sup := r.reg.Value("robot_agent_uplink_error_replies_suppressed_total"); int(sup)+sent != flood {
		t.Fatalf("suppressed %d + sent %d != %d", sup, sent, flood)
	}
	// Reliable bad messages: every one is settled by an error with ref.
	for i := range 30 {
		sess.SendRaw(websocket.TextMessage, []byte(`{"type":"teleport","event_id":"gw-flood-`+strconv.Itoa(i)+`"}`))
	}
	waitFor(t, "30 errors with ref", func() bool {
		n := 0
		for _, e := range gatewayErrors(r.gw) {
			if strings.HasPrefix(e.Ref, "gw-flood-") {
				n++
			}
		}
		return n == 30
	})
}

// TestSpec_9_1_RefWithoutType: a message with an event_id but no (or a
// bad) type is answered with an error whose ref is that event_id, so it is
// settled.
func TestSpec_9_1_RefWithoutType(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	for _, msg := range []string{`{"event_id":"gw-x-1"}`, `{"type":"","event_id":"gw-x-2"}`, `{"type":7,"event_id":"gw-x-3"}`, `{"type":"skill","event_id":"gw-x-4","skill":5}`} {
		n := len(gatewayErrors(r.gw))
		sess.SendRaw(websocket.TextMessage, []byte(msg))
		waitFor(t, "error for "+msg, func() bool { return len(gatewayErrors(r.gw)) > n })
		var want struct {
			EventID string `json:"event_id"`
		}
		json.Unmarshal([]byte(msg), &want)
		if e := gatewayErrors(r.gw)[n]; e.Ref != want.EventID || e.Code != protocol.CodeBadMessage {
			t.Errorf("%s: error %+v, want bad_message with ref %q", msg, e, want.EventID)
		}
	}
}

// TestSpec_3_1_BadGatewayHello: a bad gateway hello (or anything else
// first) makes the robot close with 1002 and a reason that names the
// problem, send no error message, and reconnect with backoff.
func TestSpec_3_1_BadGatewayHello(t *testing.T) {
	cases := []struct {
		name, reason string
		send         func(c *websocket.Conn)
	}{
		{"protocol 2", "protocol", func(c *websocket.Conn) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","protocol":2,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}}`))
		}},
		{"audio_down 16 kHz", "audio_down", func(c *websocket.Conn) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":16000,"channels":1}}`))
		}},
		{"audio choice not offered", "audio.down", func(c *websocket.Conn) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","protocol":1,"session_id":"s","audio":{"up":{"format":"pcm16le","sample_rate":16000,"channels":1},"down":{"format":"opus","sample_rate":48000,"channels":1}}}`))
		}},
		{"no session_id", "session_id", func(c *websocket.Conn) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","protocol":1,"audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}}`))
		}},
		{"error first", "error", func(c *websocket.Conn) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"error","code":"internal","msg":"boom"}`))
		}},
		{"binary first", "binary", func(c *websocket.Conn) {
			c.WriteMessage(websocket.BinaryMessage, protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, nil))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var extra []string
			s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
				tc.send(c)
				texts, _ := readUntilClosed(c, 3*time.Second)
				mu.Lock()
				extra = append(extra, texts...)
				mu.Unlock()
			})
			_, reg, _ := runClient(t, wsURL(s.srv), nil)
			waitFor(t, "second attempt", func() bool { return s.connections() >= 2 && len(s.closeFrames()) >= 1 })
			cf := s.closeFrames()[0]
			if cf.Code != websocket.CloseProtocolError || !strings.Contains(cf.Text, tc.reason) {
				t.Fatalf("robot closed with %d %q, want 1002 naming %q", cf.Code, cf.Text, tc.reason)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(extra) != 0 {
				t.Fatalf("robot sent %q after a bad hello, want nothing but the close frame", extra)
			}
			if reg.Value("robot_agent_uplink_handshake_failures_total") < 1 || reg.Value("robot_agent_uplink_connects_total") != 0 {
				t.Fatal("bad hello not counted, or counted as a session")
			}
		})
	}
}

// TestSpec_3_1_NoGatewayHello: without a gateway hello within the hello
// timeout, the robot closes with 1008 and tries again.
func TestSpec_3_1_NoGatewayHello(t *testing.T) {
	s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
		readUntilClosed(c, 3*time.Second)
	})
	start := time.Now()
	runClient(t, wsURL(s.srv), func(c *Config) { c.HandshakeTimeout = 300 * time.Millisecond })
	waitFor(t, "close frame", func() bool { return len(s.closeFrames()) >= 1 })
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("robot gave up after %v, before the hello timeout", el)
	}
	if cf := s.closeFrames()[0]; cf.Code != websocket.ClosePolicyViolation || !strings.Contains(cf.Text, "hello") {
		t.Fatalf("close %d %q, want 1008 naming the missing hello", cf.Code, cf.Text)
	}
	waitFor(t, "retry", func() bool { return s.connections() >= 2 })
}

// TestSpec_2_5_SessionReplaced: close 4000 is logged at error level with
// the device id, counted, and followed by the normal reconnect.
func TestSpec_2_5_SessionReplaced(t *testing.T) {
	s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
		c.WriteMessage(websocket.TextMessage, goodHello("s", protocol.Keepalive{}))
		if n == 1 {
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(protocol.CloseSessionReplaced, "session replaced"), time.Now().Add(time.Second))
		}
		readUntilClosed(c, 3*time.Second)
	})
	_, reg, logs := runClient(t, wsURL(s.srv), nil)
	waitFor(t, "reconnect", func() bool { return s.connections() >= 2 })
	waitFor(t, "counted", func() bool { return reg.Value("robot_agent_uplink_sessions_replaced_total") == 1 })
	l := logs.String()
	if !regexp.MustCompile(`level=ERROR msg="uplink: SESSION REPLACED[^\n]*device_id=robot-1`).MatchString(l) {
		t.Fatalf("no error-level log naming the device id:\n%s", l)
	}
}

// TestSpec_3_6_KeepaliveFieldsIndependent: {interval_ms: N, timeout_ms: 0}
// keeps N and takes the default timeout; {interval_ms: 0, timeout_ms: T}
// keeps T.
func TestSpec_3_6_KeepaliveFieldsIndependent(t *testing.T) {
	t.Run("interval only", func(t *testing.T) {
		var mu sync.Mutex
		pings := 0
		s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
			c.SetPingHandler(func(d string) error {
				mu.Lock()
				pings++
				mu.Unlock()
				return c.WriteControl(websocket.PongMessage, []byte(d), time.Now().Add(time.Second))
			})
			c.WriteMessage(websocket.TextMessage, goodHello("s", protocol.Keepalive{IntervalMS: 100}))
			readUntilClosed(c, 5*time.Second)
		})
		_, reg, _ := runClient(t, wsURL(s.srv), nil)
		time.Sleep(1200 * time.Millisecond)
		mu.Lock()
		n := pings
		mu.Unlock()
		if n < 5 {
			t.Fatalf("%d pings in 1.2 s with interval_ms 100", n)
		}
		if reg.Value("robot_agent_uplink_keepalive_timeouts_total") != 0 || reg.Value("robot_agent_uplink_connects_total") != 1 {
			t.Fatal("link dropped: timeout_ms 0 must mean the 15 s default")
		}
	})
	t.Run("timeout only", func(t *testing.T) {
		s := newScripted(t, func(n int, c *websocket.Conn, s *scripted) {
			c.WriteMessage(websocket.TextMessage, goodHello("s", protocol.Keepalive{TimeoutMS: 300}))
			time.Sleep(3 * time.Second) // silent: never reads, never answers
		})
		start := time.Now()
		_, reg, _ := runClient(t, wsURL(s.srv), nil)
		waitFor(t, "keepalive timeout", func() bool { return reg.Value("robot_agent_uplink_keepalive_timeouts_total") >= 1 })
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("dead link found after %v; timeout_ms 300 with interval 0 must keep the 300 ms", el)
		}
	})
}

// TestSpec_3_7_FirstRetrySubSecond: the first retry after a stable session
// (it reached hello and lasted at least the stable time) waits a uniform
// random time under 1 s, even after earlier failures grew the backoff.
func TestSpec_3_7_FirstRetrySubSecond(t *testing.T) {
	var maxD time.Duration
	for range 2000 {
		b := reconnectBackoff{base: 500 * time.Millisecond, cap: 30 * time.Second, stable: 10 * time.Second,
			fastCap: time.Second, fastWindow: 30 * time.Second, attempt: 6}
		d := b.next(time.Time{}.Add(time.Hour), true, 15*time.Second, 0)
		if d < 0 || d >= time.Second {
			t.Fatalf("first retry after a session in %v, want [0, 1 s)", d)
		}
		maxD = max(maxD, d)
	}
	if maxD < 250*time.Millisecond {
		t.Fatalf("2000 first retries all under %v: not spread (jitter missing)", maxD)
	}
}

// holdDown is a link observer that, once armed, keeps the client from
// reconnecting (it blocks in LinkChanged(false)) until released.
type holdDown struct {
	once    sync.Once
	down    chan struct{} // closed at the first link down
	release chan struct{}
}

func (h *holdDown) LinkChanged(up bool, _ string) {
	if up {
		return
	}
	first := false
	h.once.Do(func() { first = true; close(h.down) })
	if first {
		select {
		case <-h.release:
		case <-time.After(10 * time.Second):
		}
	}
}

// TestSpec_5_3_NoStaleEphemeral: periodic progress (and acks and errors)
// made for a connection that has ended is not sent on the next one.
func TestSpec_5_3_NoStaleEphemeral(t *testing.T) {
	clk := clock.NewReal()
	gw, err := gateway.New(gateway.Config{}, clk, metrics.NewRegistry(), testLogger(t), gateway.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	hold := &holdDown{down: make(chan struct{}), release: make(chan struct{})}
	c, reg, _ := runClientWith(t, wsURL(srv), nil, hold)
	waitFor(t, "session", c.Up)
	gw.Sessions()[0].Abort()
	select { // the link is down and stays down until released
	case <-hold.down:
	case <-time.After(10 * time.Second):
		t.Fatal("link did not go down")
	}
	for i := range 5 {
		c.SendEphemeral(&protocol.PlaybackProgress{ResponseID: 1, SamplesPlayed: int64(i) * 4800})
	}
	// And some queued into the channel directly, as if written for the old
	// connection just before it died.
	for range 3 {
		c.queueEphemeral([]byte(`{"type":"playback_progress","response_id":1,"samples_played":1}`))
	}
	close(hold.release)
	waitFor(t, "second session", func() bool { return reg.Value("robot_agent_uplink_connects_total") == 2 && c.Up() })
	c.Emit(state("after", 1))
	waitFor(t, "state delivered", func() bool { return slices.Contains(gatewayStates(gw), c.BootID()+"-1") })
	for _, e := range gw.Events() {
		if p, ok := e.Msg.(*protocol.PlaybackProgress); ok {
			t.Fatalf("stale periodic progress delivered on the next connection: %+v", p)
		}
	}
	if n := reg.Value("robot_agent_uplink_stale_ephemeral_dropped_total"); n < 8 {
		t.Fatalf("stale ephemeral drops counted: %d, want 8", n)
	}
}

// TestSpec_5_3_DuplicateActedOnce: a gateway message repeated with the
// same event_id is acked both times and acted on once.
func TestSpec_5_3_DuplicateActedOnce(t *testing.T) {
	r := newRig(t, gateway.Config{}, nil)
	waitFor(t, "session", r.client.Up)
	sess := r.gw.Sessions()[0]
	for range 2 {
		sess.Send(&protocol.Skill{Meta: protocol.Meta{EventID: "gw-dup-1"}, Skill: "nod"})
	}
	waitFor(t, "two acks", func() bool {
		n := 0
		for _, e := range r.gw.Events() {
			if a, ok := e.Msg.(*protocol.Ack); ok && a.EventID == "gw-dup-1" {
				n++
			}
		}
		return n == 2
	})
	time.Sleep(50 * time.Millisecond)
	n := 0
	for _, ty := range r.handler.types() {
		if ty == protocol.TypeSkill {
			n++
		}
	}
	if n != 1 || r.reg.Value("robot_agent_uplink_duplicate_events_total") != 1 {
		t.Fatalf("skill handed to the handler %d times, want once", n)
	}
}

// TestSpec_3_1_CloseReasonValid: the close reason for a bad hello is valid
// UTF-8 of at most 123 bytes whatever the gateway sent.
func TestSpec_3_1_CloseReasonValid(t *testing.T) {
	long := strings.Repeat("é", 200) + "\xff"
	e := badHello(websocket.CloseProtocolError, "bad gateway hello: "+long, "x")
	if len(e.reason) > 123 || !utf8.ValidString(e.reason) {
		t.Fatalf("reason %q (%d bytes)", e.reason, len(e.reason))
	}
}
