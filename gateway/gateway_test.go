package gateway

import (
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

func newTestServer(t *testing.T, cfg Config) (*Server, *httptest.Server, *metrics.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	gw, err := New(cfg, clock.NewReal(), reg, slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return gw, srv, reg
}

func url(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") + Path }

func dial(t *testing.T, srv *httptest.Server, token, dev string, sub bool) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{}
	if sub {
		d.Subprotocols = []string{protocol.Subprotocol}
	}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if dev != "" {
		h.Set("X-Robot-Device-Id", dev)
	}
	return d.Dial(url(srv), h)
}

type robot struct {
	t    *testing.T
	conn *websocket.Conn
}

func connect(t *testing.T, srv *httptest.Server) *robot {
	t.Helper()
	c, _, err := dial(t, srv, "tok", "r1", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &robot{t: t, conn: c}
	r.sendJSON(&protocol.RobotHello{Protocol: 1, DeviceID: "r1", AgentVersion: "t",
		AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20}})
	m := r.read()
	if _, ok := m.(*protocol.GatewayHello); !ok {
		t.Fatalf("first gateway message %T, want hello", m)
	}
	return r
}

func (r *robot) sendJSON(m protocol.Message) {
	b, err := protocol.Marshal(m)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *robot) sendMic(utt uint32, seq uint32, flag protocol.Flag, n int) {
	pcm := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		v := int16(i * 11)
		pcm[2*i], pcm[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	f := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Flag: flag, Stream: utt, Seq: seq}, pcm)
	if err := r.conn.WriteMessage(websocket.BinaryMessage, f); err != nil {
		r.t.Fatal(err)
	}
}

// read returns the next message; binary frames come back as *binFrame.
func (r *robot) read() protocol.Message {
	r.t.Helper()
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	mt, data, err := r.conn.ReadMessage()
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	if mt == websocket.BinaryMessage {
		h, p, err := protocol.ParseHeader(data)
		if err != nil {
			r.t.Fatalf("gateway sent a bad frame: %v", err)
		}
		return &binFrame{Meta: protocol.Meta{Type: "binary"}, h: h, n: len(p)}
	}
	m, err := protocol.DecodeFromGateway(data)
	if err != nil {
		r.t.Fatalf("gateway sent an undecodable message: %v", err)
	}
	return m
}

type binFrame struct {
	protocol.Meta
	h protocol.Header
	n int
}

func TestAuthAndSubprotocol(t *testing.T) {
	_, srv, reg := newTestServer(t, Config{Token: "tok"})
	cases := []struct {
		name, token, dev string
		sub              bool
		status           int
	}{
		{"no token", "", "r1", true, http.StatusUnauthorized},
		{"wrong token", "nope", "r1", true, http.StatusForbidden},
		{"no device id", "tok", "", true, http.StatusUnauthorized},
		{"no subprotocol", "tok", "r1", false, http.StatusBadRequest},
	}
	for _, tc := range cases {
		_, resp, err := dial(t, srv, tc.token, tc.dev, tc.sub)
		if err == nil {
			t.Fatalf("%s: connection accepted", tc.name)
		}
		if resp == nil || resp.StatusCode != tc.status {
			t.Fatalf("%s: response %v, want HTTP %d", tc.name, resp, tc.status)
		}
	}
	if reg.Value("robot_agent_gateway_auth_failures_total") != 3 {
		t.Fatalf("auth failures = %d, want 3", reg.Value("robot_agent_gateway_auth_failures_total"))
	}
}

// TestNoTokenAskedNoneNeeded: a gateway without a token accepts a robot
// that presents none.
func TestNoTokenAskedNoneNeeded(t *testing.T) {
	_, srv, reg := newTestServer(t, Config{})
	c, _, err := dial(t, srv, "", "r1", true)
	if err != nil {
		t.Fatalf("robot without a token refused by a gateway that asks for none: %v", err)
	}
	c.Close()
	if n := reg.Value("robot_agent_gateway_auth_failures_total"); n != 0 {
		t.Fatalf("auth failures = %d, want 0", n)
	}
}

func TestBadHelloIsRefused(t *testing.T) {
	_, srv, _ := newTestServer(t, Config{})
	c, _, err := dial(t, srv, "tok", "r1", true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := protocol.Marshal(&protocol.RobotHello{Protocol: 1, DeviceID: "someone-else",
		AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1}})
	c.WriteMessage(websocket.TextMessage, b)
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	m, err := protocol.DecodeFromGateway(data)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.(*protocol.Error)
	if !ok || !strings.Contains(e.Msg, "differs from X-Robot-Device-Id") {
		t.Fatalf("got %#v, want an error naming the device id mismatch", m)
	}
	if e.Code != protocol.CodeUnauthorized {
		t.Fatalf("device id mismatch: code %q, want unauthorized", e.Code)
	}
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("after a bad hello: %v, want close 1008", err)
	}
}

func TestEchoResponseAndAck(t *testing.T) {
	_, srv, _ := newTestServer(t, Config{Speed: 100})
	r := connect(t, srv)
	r.sendJSON(&protocol.State{Meta: protocol.Meta{EventID: "e1"}, StateName: "battery", StateValue: []byte("87")})
	if a, ok := r.read().(*protocol.Ack); !ok || a.EventID != "e1" {
		t.Fatalf("state not acked")
	}
	r.sendMic(1, 1, protocol.FlagStart, 320)
	r.sendMic(1, 2, protocol.FlagContinue, 320)
	r.sendMic(1, 3, protocol.FlagEnd, 320)
	var types []string
	samples := 0
	var resp uint32
	for {
		m := r.read()
		types = append(types, m.Envelope().Type)
		if b, ok := m.(*binFrame); ok {
			samples += b.n / 2
			resp = b.h.Stream
		}
		if _, ok := m.(*protocol.TTSDone); ok {
			break
		}
	}
	if types[0] != protocol.TypeASR || types[1] != protocol.TypeLLMDelta || types[2] != protocol.TypeLLMDone {
		t.Fatalf("response order %v: want asr, llm_delta, llm_done, tts..., tts_done", types)
	}
	if samples != 960*3/2 || resp != 1 {
		t.Fatalf("TTS carried %d samples for response %d, want %d for response 1", samples, resp, 960*3/2)
	}
}

func TestBargeInInterruptsActiveReply(t *testing.T) {
	_, srv, reg := newTestServer(t, Config{Speed: 0.5})
	r := connect(t, srv)
	r.sendMic(1, 1, protocol.FlagStart, 16000)
	r.sendMic(1, 2, protocol.FlagEnd, 0)
	for {
		if _, ok := r.read().(*binFrame); ok {
			break // reply is streaming
		}
	}
	r.sendMic(2, 3, protocol.FlagStart, 320)
	for {
		m := r.read()
		if in, ok := m.(*protocol.Interrupt); ok {
			if in.ResponseID != 1 || in.EventID == "" {
				t.Fatalf("interrupt %+v: want response 1 with an event_id", in)
			}
			break
		}
		if _, ok := m.(*protocol.TTSDone); ok {
			t.Fatal("reply finished without an interrupt")
		}
	}
	if reg.Value("robot_agent_gateway_interrupts_total") != 1 {
		t.Fatal("interrupt not counted")
	}
}

func TestBadRobotInputKeepsSession(t *testing.T) {
	_, srv, reg := newTestServer(t, Config{})
	r := connect(t, srv)
	r.conn.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3})
	if e, ok := r.read().(*protocol.Error); !ok || e.Code != protocol.CodeBadFrame {
		t.Fatalf("truncated frame: want bad_frame error")
	}
	r.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"state","event_id":"x","state_name":""}`))
	if e, ok := r.read().(*protocol.Error); !ok || e.Code != protocol.CodeBadMessage || e.Ref != "x" || !strings.Contains(e.Msg, "state_name") {
		t.Fatalf("state without name: want bad_message naming state_name with ref x")
	}
	r.sendJSON(&protocol.State{Meta: protocol.Meta{EventID: "ok1"}, StateName: "lid", StateValue: []byte(`"open"`)})
	if a, ok := r.read().(*protocol.Ack); !ok || a.EventID != "ok1" {
		t.Fatal("session did not continue after bad input")
	}
	if reg.Value("robot_agent_gateway_bad_frames_total") != 1 || reg.Value("robot_agent_gateway_bad_messages_total") != 1 {
		t.Fatal("bad input not counted")
	}
}

func TestUpsample16to24(t *testing.T) {
	// A 500 Hz tone at 16 kHz comes out as the same tone at 24 kHz, aligned.
	in := make([]int16, 1600)
	for i := range in {
		in[i] = int16(10000 * math.Sin(2*math.Pi*500*float64(i)/16000))
	}
	out := Upsample16to24(in)
	if len(out) != 2400 {
		t.Fatalf("len = %d, want 2400", len(out))
	}
	var maxErr float64
	for i := 100; i < 2300; i++ {
		want := 10000 * math.Sin(2*math.Pi*500*float64(i)/24000)
		maxErr = math.Max(maxErr, math.Abs(float64(out[i])-want))
	}
	// Within half an output sample of alignment (the delay is fractional).
	if maxErr > 700 {
		t.Fatalf("resampled tone deviates by up to %.0f (of 10000) from the ideal", maxErr)
	}
}
