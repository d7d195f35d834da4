package main

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestSpec_6_1_HelloCapabilities: the hello lists every message class the
// robot really sends with its configured parts (face_info, greet and
// video_image included) and none it does not.
func TestSpec_6_1_HelloCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name      string
		yaml      string
		want, not []string
	}{
		{"robot with an image camera", "camera:\n  enabled: true\n  device: sim\n  width: 320\n  height: 240\n  fps: 10\n  h264:\n    enabled: false\n  image:\n    interval_ms: 500\n",
			[]string{protocol.CapMicAudio, protocol.CapTTSAudio, protocol.CapTTSBase64, protocol.CapPlaybackProgress, protocol.CapState,
				protocol.CapFaceInfo, protocol.CapGreet, protocol.CapFunctionCall, protocol.CapSkill, protocol.CapVideoImage},
			[]string{protocol.CapVideoH264}},
		{"robot without camera", "",
			[]string{protocol.CapFaceInfo, protocol.CapGreet, protocol.CapState},
			[]string{protocol.CapVideoH264, protocol.CapVideoImage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRobot(t, rigOptions{yaml: tc.yaml})
			caps := r.session(t).Hello.Capabilities
			for _, c := range tc.want {
				if !slices.Contains(caps, c) {
					t.Errorf("capabilities %v lack %q", caps, c)
				}
			}
			for _, c := range tc.not {
				if slices.Contains(caps, c) {
					t.Errorf("capabilities %v list %q, which this robot does not send", caps, c)
				}
			}
		})
	}
}

// TestSummaryMicDropsCountedOnce: the summary's mic drop count equals the
// frames really missing on the wire (the capture pump and the uplink both
// count each refused frame; they must not be added).
func TestSummaryMicDropsCountedOnce(t *testing.T) {
	clk := clock.NewReal()
	script := &sim.SpeechScript{Utterances: []sim.Utterance{{Silence: 500 * time.Millisecond}, {Speech: 1500 * time.Millisecond, Silence: 2 * time.Second}}}
	mic, err := sim.NewMic(sim.MicConfig{Script: script, Seed: 7}, clk)
	if err != nil {
		t.Fatal(err)
	}
	spk, err := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Device.ID = "drop-robot"
	cfg.Audio.MicQueueMS = 100 // 5 frames, while no gateway answers
	// Keep the link down: a loopback port nobody listens on.
	cfg.Gateway.URL, cfg.Gateway.Token = "ws://127.0.0.1:1/v1/robot", "x"
	reg := metrics.NewRegistry()
	a, err := newAgent(cfg, agentOptions{sim: true, mic: mic, speaker: spk}, clk, reg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	run := runAgent(t, a)
	waitUntil(t, 10*time.Second, "mic frames dropped", func() bool { return reg.Value("robot_agent_uplink_mic_frames_dropped_total") > 20 })
	run.stop(t)
	var out bytes.Buffer
	a.stopped = time.Now()
	a.writeSummary(&out)
	m := regexp.MustCompile(`mic:\s+\d+ utterances, (\d+) frames sent, (\d+) dropped`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no mic line in summary:\n%s", out.String())
	}
	dropped, _ := strconv.ParseInt(m[2], 10, 64)
	if want := reg.Value("robot_agent_uplink_mic_frames_dropped_total"); dropped != want {
		t.Fatalf("summary says %d dropped, the uplink dropped %d frames", dropped, want)
	}
	if c := reg.Value("robot_agent_capture_dropped_frames_total"); c != dropped {
		t.Fatalf("capture counted %d refusals, uplink %d: the premise of this test changed", c, dropped)
	}
}
