//go:build !(x264 && cgo)

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
)

// TestVideoWithoutEncoder: asking for H264 in a build without an encoder
// fails at start with a clear error, rather than streaming nothing.
func TestVideoWithoutEncoder(t *testing.T) {
	clk := clock.NewReal()
	mic, _ := sim.NewMic(sim.MicConfig{Script: &sim.SpeechScript{}}, clk)
	spk, _ := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
	cfg := config.Default()
	cfg.Device.ID = "no-encoder"
	a, err := newAgent(cfg, agentOptions{sim: true, mic: mic, speaker: spk, gwConfig: &gateway.Config{Token: "sim-token"}}, clk, metrics.NewRegistry(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	cc := defaultCameraConfig()
	cc.Enabled, cc.Device = true, camera.VideoTestDevice
	_, err = newVideoPart(a, cc)
	if !errors.Is(err, hw.ErrNotBuiltIn) || !strings.Contains(err.Error(), "-tags x264") {
		t.Fatalf("newVideoPart without an encoder: %v", err)
	}
}
