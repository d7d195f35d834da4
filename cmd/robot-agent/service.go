package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/sdnotify"
)

// service ties the agent to systemd (Type=notify): READY=1 once devices are
// open and the main loops run, WATCHDOG=1 pings only while every main loop
// (capture, playback, uplink) keeps beating, STOPPING=1 at shutdown. Without
// $NOTIFY_SOCKET it does nothing. A nil *service is valid and inert.
type service struct {
	n   *sdnotify.Notifier
	wd  *sdnotify.Watchdog
	log *slog.Logger
	// silence scales every loop's allowed silence (1 in production; tests
	// shrink it).
	silence float64
}

func newService(clk clock.Clock, log *slog.Logger, reg *metrics.Registry) *service {
	n, err := sdnotify.FromEnv(os.Getenv)
	if err != nil {
		log.Warn("systemd notify socket unusable; continuing without it", "err", err)
	}
	to, err := sdnotify.WatchdogTimeout(os.Getenv, os.Getpid())
	if err != nil {
		log.Warn("systemd watchdog settings unusable; continuing without pings", "err", err)
	}
	return &service{n: n, wd: sdnotify.NewWatchdog(clk, n, to, log, reg), log: log, silence: 1}
}

// heartbeat registers a main loop that must beat at least every maxSilence
// and returns its Beat function.
func (s *service) heartbeat(name string, maxSilence time.Duration) func() {
	if s == nil {
		return func() {}
	}
	return s.wd.Register(name, time.Duration(float64(maxSilence)*s.silence)).Beat
}

func (s *service) run(ctx context.Context) {
	if s != nil {
		s.wd.Run(ctx)
	}
}

func (s *service) ready() {
	if s != nil && s.n.Enabled() {
		if err := s.n.Ready(); err != nil {
			s.log.Warn("systemd READY notification failed", "err", err)
		}
	}
}

func (s *service) stopping() {
	if s != nil && s.n.Enabled() {
		s.n.Stopping()
	}
}

// beatingSource beats a heartbeat every time the capture loop gets audio
// (or an error) back from the mic: the loop is alive.
type beatingSource struct {
	hw.AudioSource
	beat func()
}

func (b beatingSource) Read(dst []int16) (int, error) {
	n, err := b.AudioSource.Read(dst)
	b.beat()
	return n, err
}

// beatingSink beats every time the playback loop hands a period to the
// speaker.
type beatingSink struct {
	hw.AudioSink
	beat func()
}

func (b beatingSink) Write(p []int16) error {
	err := b.AudioSink.Write(p)
	b.beat()
	return err
}

// Unwrap returns the wrapped sink, so optional capabilities of the device
// (flush, half-duplex tap) stay reachable.
func (b beatingSink) Unwrap() hw.AudioSink { return b.AudioSink }

// Unwrap returns the wrapped source.
func (b beatingSource) Unwrap() hw.AudioSource { return b.AudioSource }

// PeriodFrames keeps the sink's optional hw.Periodic capability visible.
func (b beatingSink) PeriodFrames() int {
	if p, ok := b.AudioSink.(hw.Periodic); ok {
		return p.PeriodFrames()
	}
	return 0
}
