package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// embedded starts the embedded gateway with a short keepalive so the
// keepalive check takes about 4 s (long enough for a 4 MB frame under -race).
func embedded(t *testing.T, cfg gateway.Config, hooks gateway.Hooks) string {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = "conformance-token"
	}
	if cfg.Keepalive.IntervalMS == 0 {
		cfg.Keepalive = protocol.Keepalive{IntervalMS: 1000, TimeoutMS: 4000}
	}
	cfg.Speed = 50
	gw, err := gateway.New(cfg, clock.NewReal(), metrics.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), hooks)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + gateway.Path
}

// TestEmbeddedGatewayConforms: the embedded gateway passes every check.
func TestEmbeddedGatewayConforms(t *testing.T) {
	t.Parallel()
	url := embedded(t, gateway.Config{}, gateway.Hooks{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{URL: url, Token: "conformance-token", Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Write(&b)
	t.Log("\n" + b.String())
	for _, r := range rep.Results {
		if r.Status != Pass {
			t.Errorf("%s (%s): %s %s", r.ID, r.Title, r.Status, r.Evidence)
		}
	}
	if len(rep.Results) != len(Checks()) {
		t.Errorf("%d results for %d checks", len(rep.Results), len(Checks()))
	}
}

// sloppy is a test-double gateway that breaks rules on purpose: it closes
// every bad hello with 1000 and no error, answers errors without ref, and
// closes oversized messages with 1000.
func sloppy(t *testing.T) string {
	t.Helper()
	up := websocket.Upgrader{Subprotocols: []string{protocol.Subprotocol}}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		c, err := up.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		m, err := protocol.DecodeFromRobot(data)
		if h, ok := m.(*protocol.RobotHello); err != nil || !ok || h.DeviceID != req.Header.Get("X-Robot-Device-Id") {
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
			return
		}
		n++
		b, _ := protocol.Marshal(&protocol.GatewayHello{Protocol: 1, SessionID: fmt.Sprintf("s%d", n),
			AudioDown: protocol.AudioParams{Format: "pcm16le", SampleRate: 24000, Channels: 1}})
		c.WriteMessage(websocket.TextMessage, b)
		for {
			mt, data, err := c.ReadMessage()
			if err != nil {
				c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
				return
			}
			if len(data) > protocol.MaxUplink {
				// Wrong: should be 1009 (§2.4).
				c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "too big"), time.Now().Add(time.Second))
				return
			}
			if mt != websocket.TextMessage {
				continue
			}
			m, err := protocol.DecodeFromRobot(data)
			if err != nil {
				e, _ := protocol.Marshal(&protocol.Error{Code: protocol.ErrorCode(err), Msg: err.Error()}) // no ref
				c.WriteMessage(websocket.TextMessage, e)
				continue
			}
			if id := m.Envelope().EventID; id != "" {
				a, _ := protocol.Marshal(&protocol.Ack{Meta: protocol.Meta{EventID: id}})
				c.WriteMessage(websocket.TextMessage, a)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + gateway.Path
}

// TestBrokenGatewayRowsFail: against gateways that break rules, the
// matching rows FAIL and say why.
func TestBrokenGatewayRowsFail(t *testing.T) {
	t.Parallel()
	neverAcks := embedded(t, gateway.Config{}, gateway.Hooks{BeforeAck: func(*gateway.Session, protocol.Message) bool { return false }})
	cases := []struct {
		name, url, token string
		want             map[string]string // check id → evidence substring
	}{
		{"never acks", neverAcks, "conformance-token", map[string]string{
			"5.3/ack-state":             "no ack or error(ref)",
			"5.3/ack-face-info":         "no ack or error(ref)",
			"7.4/function-call-arbiter": "acked 0 times",
			"9.1/bad-json":              "session did not continue",
		}},
		{"sloppy closes and refs", sloppy(t), "tok", map[string]string{
			"3.1/version-mismatch":      "want error version_mismatch",
			"3.1/device-mismatch":       "want error unauthorized",
			"2.4/read-limit":            "want close 1009",
			"9.1/unknown-type":          `want ref`,
			"3.1/hello-timeout":         "still open",
			"2.3/bad-token":             "want HTTP 403",
			"7.4/function-call-arbiter": "no function_call_arbiter",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var only []string
			for id := range tc.want {
				only = append(only, id)
			}
			rep, err := Run(context.Background(), Config{URL: tc.url, Token: tc.token, Wait: 500 * time.Millisecond, Only: only})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			rep.Write(&b)
			t.Log("\n" + b.String())
			for id, ev := range tc.want {
				r, ok := rep.Find(id)
				if !ok || r.Status != Fail || !strings.Contains(r.Evidence, ev) {
					t.Errorf("%s: %+v, want FAIL with evidence containing %q", id, r, ev)
				}
			}
			if rep.Failed() != len(tc.want) {
				t.Errorf("%d failures, want %d", rep.Failed(), len(tc.want))
			}
		})
	}
}

// TestRunStartupErrors: no check runs against an unreachable gateway, a bad
// URL or refused credentials.
func TestRunStartupErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want error
	}{
		{Config{URL: "http://x/v1/robot", Token: "t"}, ErrConfig},
		{Config{URL: "ws://127.0.0.1:1/v1/robot", Token: ""}, ErrConfig},
		{Config{URL: "ws://127.0.0.1:1/v1/robot", Token: "t"}, ErrUnreachable},
		{Config{URL: sloppy(t), Token: "wrong"}, ErrUnreachable},
	} {
		if _, err := Run(context.Background(), tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%+v: err %v, want %v", tc.cfg, err, tc.want)
		}
	}
}
