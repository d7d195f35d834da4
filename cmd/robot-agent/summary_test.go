package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSummaryMatchesTheWire runs the simulated robot against a gateway
// that refuses its first connection attempts, drops the session once, and
// answers each greeting with a skill the robot must refuse; the summary's
// sessions, reconnects, failed attempts, mic frames and refused skills
// must be what the gateway saw, and the log must not call a failed dial a
// "session ended" nor warn of a lost link at the clean exit.
func TestSummaryMatchesTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session of several seconds")
	}
	const refuseFirst = 3
	clk := clock.NewReal()
	gwReg := metrics.NewRegistry()
	var micFrames, refusedResults, okResults atomic.Int64
	hooks := gateway.Hooks{
		OnMic: func(*gateway.Session, protocol.Header, []byte) { micFrames.Add(1) },
		OnMsg: func(_ *gateway.Session, m protocol.Message) {
			if r, ok := m.(*protocol.SkillResult); ok {
				if r.OK {
					okResults.Add(1)
				} else {
					refusedResults.Add(1)
				}
			}
		},
	}
	gw, err := gateway.New(gateway.Config{TTSMode: "binary", Speed: 4,
		// "nope" is no output of the simulated robot: the arbiter refuses.
		GreetSkill: &protocol.Skill{Skill: "gpio.blink", Args: json.RawMessage(`{"pin":"nope","times":1,"period_ms":100}`)},
	}, clk, gwReg, quietLog(), hooks)
	if err != nil {
		t.Fatal(err)
	}
	var attempts, refused atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) <= refuseFirst {
			refused.Add(1)
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		gw.ServeHTTP(w, r)
	}))
	defer srv.Close()

	cfg := testAgentConfig(t, "summary-robot")
	cfg.Gateway.URL = "ws" + strings.TrimPrefix(srv.URL, "http") + gateway.Path
	cfg.Sim.SpeechMS, cfg.Sim.SilenceMS = 1000, 1500
	if err := validateConfig(cfg, true, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	a, r := startTestAgent(t, cfg, agentOptions{}, clk, metrics.NewRegistry(), slog.New(slog.NewTextHandler(&logs, nil)))
	sessions := func() int64 { return gwReg.Value("robot_agent_gateway_sessions_total") }
	waitUntil(t, 15*time.Second, "the first session", func() bool { return sessions() == 1 })
	waitUntil(t, 15*time.Second, "a refused greeting skill", func() bool { return refusedResults.Load() >= 1 })
	for _, ss := range gw.Sessions() {
		ss.Abort() // the link drops; the robot reconnects
	}
	waitUntil(t, 15*time.Second, "the second session", func() bool { return sessions() == 2 })
	time.Sleep(time.Second)
	r.stop(t)
	var out bytes.Buffer
	a.writeSummary(&out)
	summary := out.String()
	t.Logf("summary:%s", summary)

	num := func(re string) int64 {
		m := regexp.MustCompile(re).FindStringSubmatch(summary)
		if m == nil {
			t.Fatalf("summary lacks %s:\n%s", re, summary)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	check := func(what string, got, want int64) {
		if got != want {
			t.Errorf("%s: summary says %d, the gateway saw %d\n%s", what, got, want, summary)
		}
	}
	check("sessions", num(`uplink: +(\d+) session\(s\)`), sessions())
	check("reconnects", num(`(\d+) reconnect\(s\)`), sessions()-1)
	check("failed connection attempts", num(`(\d+) failed connection attempt\(s\)`), refused.Load())
	check("refused skills", num(`(\d+) refused or failed`), refusedResults.Load())
	check("ok skills", num(`skills (\d+) ok`), okResults.Load())
	// Frames in flight when the gateway dropped the connection were sent
	// by the robot but never read: at most a few frames' worth.
	sent, got := num(`(\d+) frames sent`), micFrames.Load()
	if sent < got || sent > got+10 {
		t.Errorf("mic frames: summary says %d sent, the gateway received %d", sent, got)
	}

	log := logs.String()
	dialFailures := strings.Count(log, "uplink: cannot connect to the gateway, retrying")
	if dialFailures != refuseFirst {
		t.Errorf("logged %d failed connection attempts, want %d", dialFailures, refuseFirst)
	}
	if n := strings.Count(log, "uplink: session ended"); n != 1 {
		t.Errorf("logged %d \"session ended\", want 1 (the dropped session only)", n)
	}
	shutdown := log[strings.Index(log, "shutting down"):]
	if strings.Contains(shutdown, "level=WARN") {
		t.Errorf("warnings during the clean shutdown:\n%s", shutdown)
	}
}

// The summary's room line: learnt, restored, assumed (the guard held reads
// with the typical room before learning this one), or nothing.
func TestRoomLine(t *testing.T) {
	for _, tc := range []struct {
		rt       float64
		held     int64
		restored bool
		want     string
	}{
		{0.78, 12, false, "reverberation time 0.78 s learnt from the mic; 12 read(s)"},
		{0.7, 3, true, "reverberation time 0.70 s restored from duplex.room_file and learnt on from the mic; 3 read(s)"},
		{0, 5, false, "not learnt yet (a typical small room assumed); 5 read(s)"},
		{0, 0, false, ""},
	} {
		got := roomLine(tc.rt, tc.held, tc.restored)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("roomLine(%v, %d, %v) = %q, want it to say %q", tc.rt, tc.held, tc.restored, got, tc.want)
		}
	}
}
