package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// A robot that is slow to read fills the session's send queue. Its pings
// must still be answered without stopping the read loop: a read loop that
// waited for room in the queue to send a pong would stop reading the
// robot's answers while the robot waits for the gateway to read them (a
// deadlock the flood test once hit under -race). And once the connection
// is gone, a sender waiting for room returns instead of hanging.
func TestFullSendQueueKeepsReading(t *testing.T) {
	got := make(chan string, 16)
	gw, err := New(Config{}, clock.NewReal(), metrics.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{
		OnMsg: func(_ *Session, m protocol.Message) {
			if a, ok := m.(*protocol.Ack); ok {
				got <- a.EventID
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := connect(t, srv)
	ss, err := gw.NextSession(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Fill the queue; the robot reads nothing from here on.
	senderDone := make(chan error, 1)
	go func() {
		junk := make([]byte, 8192)
		for {
			if err := ss.SendRaw(websocket.BinaryMessage, junk); err != nil {
				senderDone <- err
				return
			}
		}
	}()
	// Full and staying full: the socket's buffers are full too and the
	// write loop is stuck in a write.
	for full := 0; full < 50; {
		if ctx.Err() != nil {
			t.Fatal("send queue never stayed full")
		}
		if len(ss.out) == cap(ss.out) {
			full++
		} else {
			full = 0
		}
		time.Sleep(5 * time.Millisecond)
	}

	if err := r.conn.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// An ack needs no answer: the read loop has no reason to wait.
	r.sendJSON(&protocol.Ack{Meta: protocol.Meta{EventID: "after-ping"}})
	select {
	case id := <-got:
		if id != "after-ping" {
			t.Fatalf("got ack %q", id)
		}
	case <-time.After(3 * time.Second): // the write loop is stuck for 5 s
		t.Fatal("gateway stopped reading after a ping while its send queue was full")
	}

	r.conn.Close()
	select {
	case err := <-senderDone:
		t.Logf("blocked sender returned: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a sender waiting for room in the queue still hangs 10 s after the robot left")
	}
}

// lateLog fails the test for anything logged after closed is set.
type lateLog struct {
	t      *testing.T
	closed atomic.Bool
}

func (w *lateLog) Write(p []byte) (int, error) {
	if w.closed.Load() {
		w.t.Errorf("logged after Close returned: %s", p)
	}
	return len(p), nil
}

// Close ends the sessions and waits for their goroutines: the write loop,
// stuck in a write to a robot that reads nothing, fails when Close closes
// the connection and logs that, before Close returns (an http.Server's
// Shutdown does not wait for hijacked connections; the agent's embedded
// gateway once logged into a finished run's buffer). A connection after
// Close is refused.
func TestCloseWaitsForSessionGoroutines(t *testing.T) {
	w := &lateLog{t: t}
	gw, err := New(Config{}, clock.NewReal(), metrics.NewRegistry(), slog.New(slog.NewTextHandler(w, nil)), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect(t, srv)
	ss, err := gw.NextSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		junk := make([]byte, 8192)
		for ss.SendRaw(websocket.BinaryMessage, junk) == nil {
		}
	}()
	for len(ss.out) < cap(ss.out) {
		if ctx.Err() != nil {
			t.Fatal("send queue never filled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	start := time.Now()
	if err := gw.Close(cctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	w.closed.Store(true)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Close took %v", el)
	}
	time.Sleep(200 * time.Millisecond) // anything still running would log now
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + Path
	h := http.Header{"Authorization": {"Bearer x"}, "X-Robot-Device-Id": {"late"}}
	d := websocket.Dialer{Subprotocols: []string{protocol.Subprotocol}}
	if c, _, err := d.Dial(u, h); err == nil {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, _, err := c.ReadMessage(); err == nil {
			t.Error("a robot connecting after Close got a message")
		}
		c.Close()
	}
}
