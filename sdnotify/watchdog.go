package sdnotify

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

// Sender is what the Watchdog needs from a Notifier.
type Sender interface {
	Watchdog() error
	Status(msg string) error
}

// WatchdogTimeout returns the watchdog timeout systemd set for this process
// (WATCHDOG_USEC), or 0 when there is none: unset, or WATCHDOG_PID names
// another process. Pass os.Getenv and os.Getpid().
func WatchdogTimeout(getenv func(string) string, pid int) (time.Duration, error) {
	usec := getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	if p := getenv("WATCHDOG_PID"); p != "" {
		wpid, err := strconv.Atoi(p)
		if err != nil {
			return 0, fmt.Errorf("sdnotify: WATCHDOG_PID=%q: not a number", p)
		}
		if wpid != pid {
			return 0, nil
		}
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("sdnotify: WATCHDOG_USEC=%q: not a positive number", usec)
	}
	return time.Duration(n) * time.Microsecond, nil
}

// Watchdog pings the service manager every timeout/2, but only while every
// registered Heartbeat has beaten within its maxSilence.
type Watchdog struct {
	clk    clock.Clock
	n      Sender
	period time.Duration
	log    *slog.Logger

	pings   *metrics.Counter
	skipped *metrics.Counter
	stalled *metrics.Gauge

	mu         sync.Mutex
	beats      []*Heartbeat
	wasStalled bool

	armed func() // test hook: called each time Run has armed its timer
}

// NewWatchdog returns a Watchdog that sends through n. timeout is the
// service's watchdog timeout (see WatchdogTimeout); 0 disables pinging, but
// heartbeats still work and Tick still reports health. log and reg may be
// nil.
func NewWatchdog(clk clock.Clock, n Sender, timeout time.Duration, log *slog.Logger, reg *metrics.Registry) *Watchdog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	return &Watchdog{
		clk:     clk,
		n:       n,
		period:  timeout / 2,
		log:     log,
		pings:   reg.Counter("robot_agent_watchdog_pings_total", "WATCHDOG=1 keep-alives sent to systemd."),
		skipped: reg.Counter("robot_agent_watchdog_skipped_total", "Watchdog ticks without a ping because a main loop stalled."),
		stalled: reg.Gauge("robot_agent_watchdog_stalled_loops", "Main loops silent for longer than their limit."),
	}
}

// Period returns the ping period, timeout/2 (0 when disabled).
func (w *Watchdog) Period() time.Duration { return w.period }

// Register adds a main loop that must call Beat at least every maxSilence.
// A loop that waits on purpose (reconnect back-off, no audio to play) must
// still beat from its wait. The heartbeat counts as fresh at registration.
func (w *Watchdog) Register(name string, maxSilence time.Duration) *Heartbeat {
	hb := &Heartbeat{name: name, maxSilence: maxSilence, clk: w.clk}
	hb.Beat()
	w.mu.Lock()
	w.beats = append(w.beats, hb)
	w.mu.Unlock()
	return hb
}

// RegisterProgress adds a main loop whose liveness is read from a progress
// counter instead of Beat calls: at each check, a counter that moved since
// the previous check counts as a beat. Use it for loops owned by packages
// that expose a monotonic count of their iterations (a metrics.Counter's
// Value, say) and must not know about systemd. progress is called from the
// goroutine running Tick/Stalled and must not block.
func (w *Watchdog) RegisterProgress(name string, maxSilence time.Duration, progress func() int64) *Heartbeat {
	hb := &Heartbeat{name: name, maxSilence: maxSilence, clk: w.clk, progress: progress, lastVal: progress()}
	hb.Beat()
	w.mu.Lock()
	w.beats = append(w.beats, hb)
	w.mu.Unlock()
	return hb
}

// Heartbeat is one main loop's liveness signal. Only the loop that owns it
// calls Beat; Done may be called from any goroutine.
type Heartbeat struct {
	name       string
	maxSilence time.Duration
	clk        clock.Clock
	last       atomic.Int64 // clk.Mono() of the last Beat, ns
	done       atomic.Bool

	progress func() int64 // RegisterProgress only
	lastVal  int64        // progress() at the previous check; guarded by Watchdog.mu
}

// Beat records that the loop made progress. It never blocks or allocates
// (with the real clock).
func (h *Heartbeat) Beat() { h.last.Store(int64(h.clk.Mono())) }

// Done takes the loop out of the health check (it ended on purpose).
func (h *Heartbeat) Done() { h.done.Store(true) }

// Name returns the name given to Register.
func (h *Heartbeat) Name() string { return h.name }

// Stalled returns the names of registered loops that have not beaten within
// their maxSilence, with how long they have been silent.
func (w *Watchdog) Stalled() []string {
	now := w.clk.Mono()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, h := range w.beats {
		if h.done.Load() {
			continue
		}
		if h.progress != nil {
			if v := h.progress(); v != h.lastVal {
				h.lastVal = v
				h.last.Store(int64(now))
			}
		}
		if silent := now - time.Duration(h.last.Load()); silent > h.maxSilence {
			out = append(out, fmt.Sprintf("%s (silent %v, limit %v)", h.name, silent, h.maxSilence))
		}
	}
	return out
}

// Tick checks every heartbeat once and sends WATCHDOG=1 if all are fresh.
// It reports whether the agent was healthy. On the first unhealthy tick it
// logs and sets STATUS= to the stalled loops; on recovery it sets STATUS=
// back before pinging. Run calls Tick every Period.
func (w *Watchdog) Tick() bool {
	stalled := w.Stalled()
	w.stalled.Set(int64(len(stalled)))
	w.mu.Lock()
	was := w.wasStalled
	w.wasStalled = len(stalled) > 0
	w.mu.Unlock()
	if len(stalled) > 0 {
		w.skipped.Inc()
		if !was {
			msg := "watchdog: main loop stalled: " + strings.Join(stalled, ", ")
			w.log.Error("sdnotify: withholding watchdog ping", "stalled", stalled)
			if err := w.n.Status(msg); err != nil {
				w.log.Warn("sdnotify: status", "err", err)
			}
		}
		return false
	}
	if was {
		w.log.Info("sdnotify: main loops recovered, watchdog pings resume")
		if err := w.n.Status("running"); err != nil {
			w.log.Warn("sdnotify: status", "err", err)
		}
	}
	if err := w.n.Watchdog(); err != nil {
		w.log.Warn("sdnotify: watchdog ping", "err", err)
		return true
	}
	w.pings.Inc()
	return true
}

// Run calls Tick every Period until ctx is done, then returns nil. With
// pinging disabled (timeout 0) it only waits for ctx.
func (w *Watchdog) Run(ctx context.Context) error {
	if w.period <= 0 {
		<-ctx.Done()
		return nil
	}
	t := w.clk.NewTimer(w.period)
	defer t.Stop()
	for {
		if w.armed != nil {
			w.armed()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		w.Tick()
		t.Reset(w.period)
	}
}
