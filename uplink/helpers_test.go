package uplink

import (
	"context"
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

// The set-up the test gateways and clients of this package share.

// wsURL is the robot endpoint of a test gateway served by s.
func wsURL(s *httptest.Server) string { return "ws" + strings.TrimPrefix(s.URL, "http") + gateway.Path }

// robotUpgrader upgrades a test gateway's requests to the protocol's
// WebSocket subprotocol.
var robotUpgrader = websocket.Upgrader{Subprotocols: []string{protocol.Subprotocol}}

// acceptRobot starts a test gateway's connection: it upgrades the request
// and reads the robot's first message, which must be its hello. It returns
// a nil conn when the upgrade fails, the robot goes away before its hello,
// or the first message is not a robot hello (reported on t when t is not
// nil). Otherwise the caller closes the conn.
func acceptRobot(t testing.TB, w http.ResponseWriter, r *http.Request) (*websocket.Conn, *protocol.RobotHello) {
	c, err := robotUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, nil
	}
	_, data, err := c.ReadMessage()
	if err != nil {
		c.Close()
		return nil, nil
	}
	m, err := protocol.DecodeFromRobot(data)
	hello, ok := m.(*protocol.RobotHello)
	if err != nil || !ok {
		if t != nil {
			t.Errorf("robot's first message is not a hello: %q (%v)", data, err)
		}
		c.Close()
		return nil, nil
	}
	return c, hello
}

// startTestClient makes a client of cfg and runs it until the test ends.
func startTestClient(t *testing.T, cfg Config, reg *metrics.Registry, log *slog.Logger, tts TTSSink, h ControlHandler) *Client {
	t.Helper()
	c := newTestClient(t, cfg, reg, log, tts, h)
	runUntilCleanup(t, c)
	return c
}

// newTestClient makes a client of cfg on the real clock.
func newTestClient(t *testing.T, cfg Config, reg *metrics.Registry, log *slog.Logger, tts TTSSink, h ControlHandler) *Client {
	t.Helper()
	c, err := New(cfg, clock.NewReal(), reg, log, tts, h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runUntilCleanup runs c until the test ends; the clean-up waits up to 5 s for
// Run to return.
func runUntilCleanup(t *testing.T, c *Client) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("client did not stop")
		}
	})
}
