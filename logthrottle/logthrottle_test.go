package logthrottle

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
func count(ls []string, sub string) int {
	n := 0
	for _, l := range ls {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

func newLog(clk clock.Clock, reg *metrics.Registry, cfg Config) (*slog.Logger, *Handler, *lines) {
	out := &lines{}
	h := New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}), clk, reg, cfg)
	return slog.New(h), h, out
}

func TestFloodsAreBoundedPerClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level
		msg   string
		n     int
	}{
		{"60k bad messages (WARN)", slog.LevelWarn, "uplink: rejected control message from gateway", 60000},
		{"40k interrupts (INFO)", slog.LevelInfo, "interrupt", 40000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake()
			reg := metrics.NewRegistry()
			log, h, out := newLog(clk, reg, Config{Burst: 10, Window: 10 * time.Second})
			// The flood over 6 s, interleaved with an unrelated class.
			for i := 0; i < tc.n; i++ {
				log.Log(nil, tc.level, tc.msg, "i", i, "err", fmt.Sprintf("bad %d", i))
				if i%1000 == 0 {
					log.Info("session established")
				}
				if i%(tc.n/60) == 0 {
					clk.Advance(100 * time.Millisecond)
				}
			}
			h.Flush()
			ls := out.all()
			if got := count(ls, "msg=\""+tc.msg+"\"") + count(ls, "msg="+tc.msg+" "); got != 10 {
				t.Fatalf("flood lines written: %d, want the burst of 10", got)
			}
			if got := len(ls); got > 40 {
				t.Fatalf("%d log lines for a flood of %d, want ≤ 40", got, tc.n)
			}
			sum := count(ls, "suppressed="+fmt.Sprint(tc.n-10))
			if sum != 1 {
				t.Fatalf("want one summary line saying %d suppressed; log:\n%s", tc.n-10, strings.Join(ls, "\n"))
			}
			if got := reg.Value("robot_agent_log_suppressed_total"); got < int64(tc.n-10) {
				t.Fatalf("suppressed counter %d, want ≥ %d", got, tc.n-10)
			}
		})
	}
}

func TestWindowsAndPassThrough(t *testing.T) {
	clk := clock.NewFake()
	log, _, out := newLog(clk, nil, Config{Burst: 2, Window: time.Second})
	for i := 0; i < 5; i++ {
		log.Warn("w")
		log.Debug("trace") // below MinLevel: never throttled
	}
	clk.Advance(2 * time.Second)
	log.Warn("w") // new window: the summary of the old one, then the line
	ls := out.all()
	if got := count(ls, "msg=w"); got != 3 {
		t.Fatalf("w lines %d, want 2 + 1; log:\n%s", got, strings.Join(ls, "\n"))
	}
	if got := count(ls, "msg=trace"); got != 5 {
		t.Fatalf("debug lines %d, want 5 (not throttled)", got)
	}
	if got := count(ls, "suppressed=3 similar_to=w"); got != 1 {
		t.Fatalf("summary missing or wrong; log:\n%s", strings.Join(ls, "\n"))
	}
	// With attrs (derived handlers) share the limits.
	l2 := log.With("component", "x")
	for i := 0; i < 5; i++ {
		l2.Warn("w")
	}
	if got := count(out.all(), "msg=w"); got != 4 {
		t.Fatalf("derived logger not throttled with the same class: %d lines", got)
	}
}

func TestClassLimit(t *testing.T) {
	clk := clock.NewFake()
	log, h, out := newLog(clk, nil, Config{Burst: 1, Window: time.Minute, MaxClasses: 4})
	for i := 0; i < 1000; i++ {
		log.Warn(fmt.Sprintf("distinct %d", i)) // messages that embed values
	}
	h.Flush()
	if got := len(out.all()); got > 10 {
		t.Fatalf("%d lines for 1000 distinct messages with 4 classes", got)
	}
}
