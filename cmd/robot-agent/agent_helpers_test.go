package main

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/metrics"
)

// testAgentConfig is the configuration the in-process agent tests start
// from: the defaults, with deviceID and the simulated speaker's WAV in the
// test's temporary directory (not out/).
func testAgentConfig(t *testing.T, deviceID string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Device.ID = deviceID
	cfg.Sim.SpeakerWAV = filepath.Join(t.TempDir(), "played.wav")
	return cfg
}

// startTestAgent builds the simulated agent of cfg and opts (opts.sim is
// implied) and runs it until r.stop or the end of the test.
func startTestAgent(t *testing.T, cfg config.Config, opts agentOptions, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*agent, *runningAgent) {
	t.Helper()
	opts.sim = true
	a, err := newAgent(cfg, opts, clk, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	return a, runAgent(t, a)
}
