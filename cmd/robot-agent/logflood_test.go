package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/uplink"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// A gateway floods the agent with 60 000 bad messages and 40 000
// interrupts: the agent's log (its real logger and control handler) stays
// bounded, with "suppressed" lines carrying the counts.
func TestLogBoundedUnderFloods(t *testing.T) {
	if testing.Short() {
		t.Skip("100 000 messages")
	}
	var out lockedBuf
	clk, reg := clock.NewReal(), metrics.NewRegistry()
	log, throttle := newThrottledLogger(config.Log{Level: "info", Format: "text"}, &out, clk, reg)
	gw, err := gateway.New(gateway.Config{NoEcho: true}, clk, metrics.NewRegistry(), log.With("component", "gw"), gateway.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	c, err := uplink.New(uplink.Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + gateway.Path, Token: "t", DeviceID: "r",
		Hello: protocol.RobotHello{AudioUp: protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20}}},
		clk, reg, log, nil, newControlHandler(log, reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	ss, err := gw.NextSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The gateway keeps at most 1000 messages unanswered, as a gateway
	// with flow control does: without it a slow robot (-race on a loaded
	// machine) leaves the gateway's writes blocked past its 5 s write
	// deadline and the session ends, which is not what this test is about.
	deadline := time.Now().Add(120 * time.Second)
	sent := 0
	send := func(send func() error) {
		t.Helper()
		for int64(sent)-reg.Value("robot_agent_uplink_answers_sent_total") > 1000 {
			if time.Now().After(deadline) {
				t.Fatalf("robot stopped answering: %d sent, %d answers", sent, reg.Value("robot_agent_uplink_answers_sent_total"))
			}
			time.Sleep(time.Millisecond)
		}
		if err := send(); err != nil {
			time.Sleep(time.Second) // let both ends log why
			t.Fatalf("session ended after %d messages: %v\n%s", sent, err, sessionLines(out.lines()))
		}
		sent++
	}
	for i := 0; i < 60000; i++ {
		send(func() error {
			return ss.SendRaw(websocket.TextMessage, []byte(`{"type":"tts","event_id":"x","response_id":"not a number"}`))
		})
	}
	for i := 0; i < 40000; i++ {
		send(func() error {
			return ss.Send(&protocol.Interrupt{Meta: protocol.Meta{Type: protocol.TypeInterrupt}, ResponseID: uint32(i%1000 + 1)})
		})
	}
	for reg.Value("robot_agent_uplink_bad_messages_total") < 60000 || reg.Value("robot_agent_uplink_answers_sent_total") < 100000 {
		if time.Now().After(deadline) {
			t.Fatalf("flood not processed: %d bad, %d answers", reg.Value("robot_agent_uplink_bad_messages_total"), reg.Value("robot_agent_uplink_answers_sent_total"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	throttle.Flush()
	lines := out.lines()
	count := func(sub string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, sub) {
				n++
			}
		}
		return n
	}
	bad, intr, sup := count("rejected control message from gateway"), count("interrupt: playback flushed"), count("similar log lines suppressed")
	t.Logf("%d log lines for 100 000 messages: %d bad-message, %d interrupt, %d suppressed summaries", len(lines), bad, intr, sup)
	if len(lines) > 200 {
		t.Fatalf("%d log lines under the floods; first lines:\n%s", len(lines), strings.Join(lines[:20], "\n"))
	}
	if bad == 0 || intr == 0 || sup == 0 {
		t.Fatalf("want some of each line and a suppressed summary: bad %d, interrupt %d, summaries %d", bad, intr, sup)
	}
	if s := reg.Value("robot_agent_log_suppressed_total"); s < 99000 {
		t.Fatalf("suppressed counter %d", s)
	}
}

// sessionLines are the log lines other than the flood's (why a session ended).
func sessionLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		if !strings.Contains(l, "rejected") && !strings.Contains(l, "interrupt:") && !strings.Contains(l, "reported an error") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
