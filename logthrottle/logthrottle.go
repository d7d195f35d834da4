// Package logthrottle bounds what floods can do to the log: an slog.Handler
// wrapper that lets each class of record (level + message) through up to a
// burst per window, counts the rest, and reports them once the window is
// over with a single "N similar suppressed" line.
//
// A hostile or broken gateway can send tens of thousands of bad messages or
// interrupts per second; each is logged where it is handled, and without
// this the journal (and an SD card) takes the flood. With it, a flood of one
// kind costs Burst lines plus one summary per Window.
//
// Records below MinLevel (debug, by default) pass untouched: they are
// opt-in tracing.
package logthrottle

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

// Config sets the limits. Zero values take the defaults.
type Config struct {
	Burst      int           // records per class per window; default 10
	Window     time.Duration // default 10 s
	MinLevel   slog.Level    // records below pass through; default slog.LevelInfo
	MaxClasses int           // classes tracked at once; default 1024 (beyond: one shared "other" class)
}

func (c *Config) defaults() {
	if c.Burst <= 0 {
		c.Burst = 10
	}
	if c.Window <= 0 {
		c.Window = 10 * time.Second
	}
	if c.MaxClasses <= 0 {
		c.MaxClasses = 1024
	}
}

// SuppressedMsg is the message of the summary record.
const SuppressedMsg = "logthrottle: similar log lines suppressed"

// Handler is the rate-limiting slog.Handler. Its methods may be called from
// any goroutine (the state is shared by every handler derived with
// WithAttrs/WithGroup).
type Handler struct {
	inner slog.Handler
	st    *state
}

type class struct {
	level      slog.Level
	msg        string
	start      time.Time // window start
	n          int       // records in this window
	suppressed int
}

type state struct {
	cfg        Config
	clk        clock.Clock
	root       slog.Handler // the inner handler without attrs, for summaries
	suppressed *metrics.Counter

	mu        sync.Mutex
	classes   map[string]*class
	lastSweep time.Time
}

// New wraps inner. reg may be nil; with it, suppressed records are counted
// in robot_agent_log_suppressed_total.
func New(inner slog.Handler, clk clock.Clock, reg *metrics.Registry, cfg Config) *Handler {
	cfg.defaults()
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	return &Handler{inner: inner, st: &state{cfg: cfg, clk: clk, root: inner, classes: make(map[string]*class),
		suppressed: reg.Counter("robot_agent_log_suppressed_total", "Log records suppressed by the per-class rate limit.")}}
}

// Inner returns the wrapped handler (with this handler's attributes), for
// a component whose every line is wanted (the demo gateway of make run).
func (h *Handler) Inner() slog.Handler { return h.inner }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(as), st: h.st}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), st: h.st}
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.st
	if r.Level < s.cfg.MinLevel {
		return h.inner.Handle(ctx, r)
	}
	now := s.clk.Now()
	s.mu.Lock()
	due := s.sweepLocked(now, false)
	key := r.Level.String() + "\x00" + r.Message
	c, ok := s.classes[key]
	if !ok {
		if len(s.classes) >= s.cfg.MaxClasses {
			key = r.Level.String() + "\x00(other)"
			c = s.classes[key]
		}
		if c == nil {
			c = &class{level: r.Level, msg: r.Message, start: now}
			if len(s.classes) >= s.cfg.MaxClasses {
				c.msg = "(other messages)"
			}
			s.classes[key] = c
		}
	}
	if now.Sub(c.start) >= s.cfg.Window {
		if c.suppressed > 0 {
			due = append(due, summary{c.level, c.msg, c.suppressed, now.Sub(c.start)})
		}
		c.start, c.n, c.suppressed = now, 0, 0
	}
	c.n++
	pass := c.n <= s.cfg.Burst
	if !pass {
		c.suppressed++
		s.suppressed.Inc()
	}
	s.mu.Unlock()
	s.emit(ctx, now, due)
	if !pass {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

type summary struct {
	level slog.Level
	msg   string
	n     int
	over  time.Duration
}

// sweepLocked collects the summaries of classes whose window ended (at
// most once a second unless force), and forgets idle classes.
func (s *state) sweepLocked(now time.Time, force bool) []summary {
	if !force && now.Sub(s.lastSweep) < time.Second {
		return nil
	}
	s.lastSweep = now
	var out []summary
	for k, c := range s.classes {
		if !force && now.Sub(c.start) < s.cfg.Window {
			continue
		}
		if c.suppressed > 0 {
			out = append(out, summary{c.level, c.msg, c.suppressed, now.Sub(c.start)})
		}
		delete(s.classes, k)
	}
	return out
}

func (s *state) emit(ctx context.Context, now time.Time, due []summary) {
	for _, d := range due {
		r := slog.NewRecord(now, d.level, SuppressedMsg, 0)
		r.AddAttrs(slog.Int("suppressed", d.n), slog.String("similar_to", d.msg), slog.Duration("over", d.over.Round(time.Millisecond)))
		s.root.Handle(ctx, r)
	}
}

// Flush writes the summary line of every class with suppressed records now
// (call it at shutdown) and starts every class afresh.
func (h *Handler) Flush() {
	s := h.st
	now := s.clk.Now()
	s.mu.Lock()
	due := s.sweepLocked(now, true)
	s.mu.Unlock()
	s.emit(context.Background(), now, due)
}

// Run sweeps once per interval until ctx ends, so a flood's summary line is
// written even if nothing else is logged afterwards. Optional.
func (h *Handler) Run(ctx context.Context) {
	t := h.st.clk.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			now := h.st.clk.Now()
			h.st.mu.Lock()
			due := h.st.sweepLocked(now, false)
			h.st.mu.Unlock()
			h.st.emit(ctx, now, due)
			t.Reset(time.Second)
		}
	}
}
