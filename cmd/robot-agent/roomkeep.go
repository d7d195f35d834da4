package main

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/reverb"
	"github.com/robot-agent/robot-agent/roomfile"
)

// roomSaveEvery is how often the room model is saved while the agent runs
// (if it changed), so that a power cut loses at most this much learning;
// it is saved at shutdown too.
const roomSaveEvery = 5 * time.Minute

// roomKeeper keeps the echo canceller's room model (the reverberation
// guard's, aec.Source.Room) across restarts in duplex.room_file (package
// roomfile). restore runs before the capture starts; run on its own
// goroutine until its context ends; save from any goroutine (run's and the
// shutdown's do not overlap: the shutdown saves after run has returned).
type roomKeeper struct {
	path, devices string
	src           *aec.Source
	clk           clock.Clock
	log           *slog.Logger

	mu       sync.Mutex
	saved    reverb.Model // the model in the file (or restored from it); RT60 0: none yet
	restored bool         // the guard started from the file
}

// restore starts the guard from the file, if there is a usable one; a
// missing, unreadable or stale file is logged and the room is learnt
// afresh (never a reason not to start).
func (k *roomKeeper) restore() {
	m, err := roomfile.Load(k.path, k.devices)
	switch {
	case errors.Is(err, os.ErrNotExist):
		k.log.Info("duplex: no room file yet; the room is learnt from the robot's first replies, a typical small room assumed until then", "room_file", k.path)
		return
	case err != nil:
		k.log.Warn("duplex: room file not used; the room is learnt afresh", "err", err)
		return
	}
	if err := k.src.RestoreRoom(m); err != nil {
		k.log.Warn("duplex: room file not used; the room is learnt afresh", "room_file", k.path, "err", err)
		return
	}
	k.saved, k.restored = m, true
	k.log.Info("duplex: room restored (the reverberation guard starts from it)", "room_file", k.path, "rt60_s", round2(m.RT60), "level_db", round2(m.LevelDB))
}

// run saves the model every roomSaveEvery until ctx ends.
func (k *roomKeeper) run(ctx context.Context) {
	for clock.SleepContext(ctx, k.clk, roomSaveEvery) {
		k.save()
	}
}

// save writes the model if there is one and it moved since the last save
// (0.01 s of RT60 or 0.5 dB of level: not a flash write every period for
// nothing).
func (k *roomKeeper) save() {
	m, ok := k.src.Room()
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.saved.RT60 > 0 && math.Abs(m.RT60-k.saved.RT60) < 0.01 && math.Abs(m.LevelDB-k.saved.LevelDB) < 0.5 {
		return
	}
	if err := roomfile.Save(k.path, k.devices, m, k.clk.Now()); err != nil {
		k.log.Warn("duplex: room file not saved", "err", err)
		return
	}
	k.saved = m
	k.log.Info("duplex: room saved", "room_file", k.path, "rt60_s", round2(m.RT60), "level_db", round2(m.LevelDB))
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// audioDevicesID names the mic and speaker a room file belongs to.
func (a *agent) audioDevicesID() string {
	switch {
	case a.opts.mic != nil:
		return "injected devices"
	case a.opts.sim:
		return "simulated devices"
	}
	c, err := loadAudioDevices(a.cfg, os.Getenv)
	if err != nil {
		return "unknown devices"
	}
	name := func(s string) string {
		if s == "" {
			return "default"
		}
		return s
	}
	return "mic=" + name(c.Input) + " speaker=" + name(c.Output)
}
