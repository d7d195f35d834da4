package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
)

// stallableSink blocks in Write while stalled is set, like a wedged
// playback loop.
type stallableSink struct {
	hw.AudioSink
	stalled atomic.Bool
}

func (s *stallableSink) Write(p []int16) error {
	for s.stalled.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	return s.AudioSink.Write(p)
}

// TestServiceNotifyReadyAndWatchdog runs the agent against a fake systemd
// notify socket: READY=1 arrives once the agent runs, WATCHDOG=1 pings
// flow while every main loop beats, stop while the playback loop is wedged,
// and resume when it recovers; STOPPING=1 at shutdown.
func TestServiceNotifyReadyAndWatchdog(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var mu sync.Mutex
	type msg struct {
		at   time.Time
		text string
	}
	var got []msg
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, msg{time.Now(), string(buf[:n])})
			mu.Unlock()
		}
	}()
	count := func(s string, after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range got {
			if strings.Contains(m.text, s) && m.at.After(after) {
				n++
			}
		}
		return n
	}
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000") // ping every 100 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	clk := clock.NewReal()
	reg := metrics.NewRegistry()
	svc := newService(clk, quietLog(), reg)
	svc.silence = 0.03 // playback/capture may be silent 300 ms, uplink 600 ms
	mic, _ := sim.NewMic(sim.MicConfig{}, clk)
	spk0, _ := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
	spk := &stallableSink{AudioSink: spk0}
	gw := gateway.Config{Token: "sim-token"}
	_, r := startTestAgent(t, testAgentConfig(t, "svc-test"), agentOptions{mic: mic, speaker: spk, gwConfig: &gw, svc: svc}, clk, reg, quietLog())
	r.beforeStop = func() { spk.stalled.Store(false) }
	waitUntil(t, 3*time.Second, "READY=1", func() bool { return count("READY=1", time.Time{}) == 1 })
	waitUntil(t, 3*time.Second, "watchdog pings", func() bool { return count("WATCHDOG=1", time.Time{}) >= 3 })

	spk.stalled.Store(true)
	time.Sleep(400 * time.Millisecond) // past the playback loop's 300 ms
	stalledAt := time.Now()
	time.Sleep(500 * time.Millisecond)
	if n := count("WATCHDOG=1", stalledAt); n != 0 {
		t.Fatalf("%d watchdog pings while the playback loop was wedged", n)
	}
	if reg.Value("robot_agent_watchdog_skipped_total") == 0 {
		t.Fatal("skipped pings not counted")
	}
	spk.stalled.Store(false)
	recovered := time.Now()
	waitUntil(t, 3*time.Second, "pings after recovery", func() bool { return count("WATCHDOG=1", recovered) >= 2 })
	r.stop(t)
	if count("STOPPING=1", time.Time{}) != 1 {
		t.Fatal("no STOPPING=1 at shutdown")
	}
	if count("READY=1", time.Time{}) != 1 {
		t.Fatal("READY=1 sent more than once")
	}
}
