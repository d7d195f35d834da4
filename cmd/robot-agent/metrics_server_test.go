package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
)

// The built-in default port taken (here by the test itself, or by anything
// else) is a warning: the agent runs on without /metrics.
func TestMetricsDefaultPortBusyIsAWarning(t *testing.T) {
	if ln, err := net.Listen("tcp", config.DefaultMetricsListen); err == nil {
		defer ln.Close()
	}
	var logs bytes.Buffer
	a := &agent{cfg: config.Default(), reg: metrics.NewRegistry(), log: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := a.startMetrics(); err != nil {
		t.Fatalf("busy default port: %v, want a warning only", err)
	}
	defer a.close()
	if a.ops.metricsURL != "" || !strings.Contains(logs.String(), "metrics: default address unavailable") {
		t.Fatalf("url %q, log %q", a.ops.metricsURL, logs.String())
	}
}

// A port the user chose must be free: start-up fails naming the setting.
func TestMetricsChosenPortBusyIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := config.Default()
	cfg.Metrics.Listen = ln.Addr().String()
	a := &agent{cfg: cfg, reg: metrics.NewRegistry(), log: quietLog()}
	err = a.startMetrics()
	want := `metrics.listen: "` + ln.Addr().String() + `": cannot listen: `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "address already in use") || exitCode(err) != exitNetwork {
		t.Fatalf("error %v (exit %d), want %q... address already in use, exit %d", err, exitCode(err), want, exitNetwork)
	}
	cfg.Metrics.Listen = config.MetricsOff
	a = &agent{cfg: cfg, reg: metrics.NewRegistry(), log: quietLog()}
	if err := a.startMetrics(); err != nil || a.ops.metricsURL != "" {
		t.Fatalf("off: %v %q", err, a.ops.metricsURL)
	}
}

// TestMetricsEndpointHasTheLatencyHistograms scrapes a running agent: the
// P4 path histograms and the buffer histogram have observations.
func TestMetricsEndpointHasTheLatencyHistograms(t *testing.T) {
	e := startE2E(t, &sim.SpeechScript{Utterances: []sim.Utterance{{Speech: 0, Silence: 300 * time.Millisecond}, {Speech: 600 * time.Millisecond, Silence: 3 * time.Second}}},
		gateway.Config{Token: "sim-token", Speed: 8}, func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:0" })
	if e.a.ops.metricsURL == "" {
		t.Fatal("metrics not served")
	}
	count := func(body, name string) int {
		m := regexp.MustCompile(`(?m)^` + name + `_count (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	var body string
	waitUntil(t, 15*time.Second, "TTS played and scraped", func() bool {
		resp, err := http.Get(e.a.ops.metricsURL)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return count(body, "robot_agent_playback_latency_seconds") > 0 && count(body, "robot_agent_playback_buffer_seconds") > 0
	})
	for _, name := range []string{"robot_agent_uplink_mic_send_latency_seconds", "robot_agent_playback_latency_seconds", "robot_agent_playback_buffer_seconds"} {
		if count(body, name) <= 0 || !strings.Contains(body, "# TYPE "+name+" histogram") || !strings.Contains(body, name+`_bucket{le="+Inf"}`) {
			t.Errorf("%s: no histogram with observations in /metrics", name)
		}
	}
}

// The flight recorder's taps sit on the fast lane: they must not allocate.
func TestRecorderTapsDoNotAllocate(t *testing.T) {
	a := &agent{cfg: config.Default(), clk: clock.NewReal(), mic: constSource{}}
	if err := a.setupRecorder(); err != nil {
		t.Fatal(err)
	}
	tts := a.recordTTS(nopTTS{})
	buf := make([]int16, 320)
	chunk := make([]byte, 1920)
	if n := testing.AllocsPerRun(200, func() { a.mic.Read(buf) }); n != 0 {
		t.Errorf("mic tap: %v allocations per read", n)
	}
	if n := testing.AllocsPerRun(200, func() { tts.PushPCM(1, chunk) }); n != 0 {
		t.Errorf("TTS tap: %v allocations per chunk", n)
	}
	if a.ops.support.rec.Mic.Written() == 0 || a.ops.support.rec.TTS.Written() == 0 {
		t.Fatal("taps recorded nothing")
	}
}

// constSource is a mic that returns a full buffer at once.
type constSource struct{ hw.AudioSource }

func (constSource) Read(dst []int16) (int, error) {
	for i := range dst {
		dst[i] = 100
	}
	return len(dst), nil
}

type nopTTS struct{}

func (nopTTS) PushPCM(uint32, []byte) error { return nil }
func (nopTTS) EndResponse(uint32)           {}
func (nopTTS) Interrupt(uint32) uint32      { return 0 }
func (nopTTS) ResetSession()                {}
