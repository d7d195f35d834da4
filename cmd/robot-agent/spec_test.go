package main

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
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
	script := &sim.SpeechScript{Utterances: []sim.Utterance{{Silence: 500 * time.Millisecond}, {Speech: 1500 * time.Millisecond, Silence: 2 * time.Second}}}
	cfg := config.Default()
	cfg.Device.ID = "drop-robot"
	cfg.Audio.MicQueueMS = 100 // 5 frames, while no gateway answers
	reg := metrics.NewRegistry()
	a := newOfflineAgent(t, cfg, sim.MicConfig{Script: script, Seed: 7}, reg)
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

func tone(n int) []int16 {
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(3000 * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	return pcm
}

func finalProgress(gw *gateway.Server, id uint32) (ev gateway.Event, idx int, ok bool) {
	for i, e := range gw.Events() {
		if p, isP := e.Msg.(*protocol.PlaybackProgress); isP && p.ResponseID == id && (p.Done || p.Interrupted) {
			return e, i, true
		}
	}
	return gateway.Event{}, -1, false
}

// TestSpec_3_5_PlaybackAcrossReconnect: audio already received keeps
// playing while the link is down; the next session's hello cuts the rest,
// and the cut response gets one final progress (interrupted, samples
// really played, the old session's id) on the new connection.
func TestSpec_3_5_PlaybackAcrossReconnect(t *testing.T) {
	gate := newLinkGate(clock.NewReal())
	r := startRobot(t, rigOptions{gw: gateway.Config{Speed: 50}, observer: gate})
	s1 := r.session(t)
	id := s1.StreamTTS(context.Background(), tone(3*24000))
	waitUntil(t, 5*time.Second, "playback started", func() bool {
		p := r.a.player.Progress()
		return p.ResponseID == id && p.SamplesPlayed >= 2400
	})
	gate.arm()
	s1.Abort()
	waitUntil(t, 5*time.Second, "link down", func() bool { return !r.a.client.Up() })
	p0 := r.a.player.Progress().SamplesPlayed
	time.Sleep(300 * time.Millisecond)
	p1 := r.a.player.Progress().SamplesPlayed
	if p1 < p0+4800 {
		t.Fatalf("played %d samples in 300 ms while the link was down, want playback to go on", p1-p0)
	}
	gate.open()
	s2 := r.session(t)
	waitUntil(t, 5*time.Second, "final progress of the cut response", func() bool { _, _, ok := finalProgress(r.a.gw, id); return ok })
	ev, _, _ := finalProgress(r.a.gw, id)
	p := ev.Msg.(*protocol.PlaybackProgress)
	if !p.Interrupted || p.Done || p.EventID == "" || p.SamplesPlayed < p1 || p.SamplesPlayed >= 3*24000 {
		t.Fatalf("final progress %+v: want interrupted, reliable, %d ≤ samples < %d", p, p1, 3*24000)
	}
	if p.SessionID != s1.ID || ev.Session != s2.ID {
		t.Fatalf("final progress for session %q sent on %q; want session_id %q (the response's) on the new connection %q", p.SessionID, ev.Session, s1.ID, s2.ID)
	}
}

// TestSpec_7_3_InterruptAckBeforeFinalProgress: the robot acks an
// interrupt before it sends the interrupted response's final progress.
func TestSpec_7_3_InterruptAckBeforeFinalProgress(t *testing.T) {
	r := startRobot(t, rigOptions{gw: gateway.Config{Speed: 50}})
	s := r.session(t)
	id := s.StreamTTS(context.Background(), tone(2*24000))
	waitUntil(t, 5*time.Second, "playback started", func() bool { return r.a.player.Progress().SamplesPlayed >= 2400 })
	from := len(r.a.gw.Events())
	s.Interrupt()
	waitUntil(t, 5*time.Second, "final progress", func() bool { _, _, ok := finalProgress(r.a.gw, id); return ok })
	_, pIdx, _ := finalProgress(r.a.gw, id)
	ackIdx := -1
	for i, e := range r.a.gw.Events()[from:] {
		if a, ok := e.Msg.(*protocol.Ack); ok && strings.Contains(a.EventID, "-ev-") {
			ackIdx = from + i
			break
		}
	}
	if ackIdx < 0 || ackIdx > pIdx {
		t.Fatalf("interrupt ack at event %d, final progress at %d: want the ack first", ackIdx, pIdx)
	}
	if p := r.a.gw.Events()[pIdx].Msg.(*protocol.PlaybackProgress); !p.Interrupted {
		t.Fatalf("final progress %+v, want interrupted", p)
	}
}

// TestSpec_7_3_DroppedOnArrivalHasNoProgress: audio dropped on arrival
// (here: for a response already interrupted) does not make a response
// "have audio": the gateway gets stale_response, and no playback_progress.
func TestSpec_7_3_DroppedOnArrivalHasNoProgress(t *testing.T) {
	r := startRobot(t, rigOptions{})
	s := r.session(t)
	s.Send(&protocol.Interrupt{ResponseID: 5, Reason: "test"}) // not seen yet: raises the watermark
	waitUntil(t, 5*time.Second, "interrupt acked", func() bool {
		for _, e := range r.a.gw.Events() {
			if _, ok := e.Msg.(*protocol.Ack); ok {
				return true
			}
		}
		return false
	})
	pcm := make([]byte, 9600)
	s.SendRaw(websocket.BinaryMessage, protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 5}, pcm))
	s.SendRaw(websocket.BinaryMessage, protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Flag: protocol.FlagTTSLast, Stream: 5, Seq: 1}, pcm))
	s.Send(&protocol.TTSDone{ResponseID: 5})
	waitUntil(t, 5*time.Second, "stale_response", func() bool {
		for _, e := range r.a.gw.Events() {
			if m, ok := e.Msg.(*protocol.Error); ok && m.Code == protocol.CodeStaleResponse {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond)
	for _, e := range r.a.gw.Events() {
		if p, ok := e.Msg.(*protocol.PlaybackProgress); ok && p.ResponseID == 5 {
			t.Fatalf("playback_progress %+v for a response whose audio was all dropped on arrival", p)
		}
	}
}

// TestSummaryVADLines: the summary says how long the VAD heard a
// speech-like background, how many runs its transient guard held back and
// how long the mic delivered digital silence, from the capture pump's own
// counts, and says nothing of any when there was none.
func TestSummaryVADLines(t *testing.T) {
	for _, tc := range []struct {
		metric      string
		add         int64
		quiet, want string
	}{
		// 150 frames of the default 20 ms.
		{capture.MetricBackgroundFrames, 150, "speech-like background", "speech-like background (babble, a television) for 3.0 s"},
		{capture.MetricTransients, 7, "held back", "vad:       7 knock(s), clap(s) or clunk(s) held back"},
		{capture.MetricSilentFrames, 100, "digital silence", "mic:       2.0 s of digital silence (every sample 0"},
		{"robot_agent_audio_output_lost_total", 2, "output device was lost", "speaker:   the output device was lost 2 time(s), reopened 0: what the robot said meanwhile did not play"},
	} {
		cfg := config.Default()
		cfg.Device.ID = "vad-robot"
		reg := metrics.NewRegistry()
		a := newOfflineAgent(t, cfg, sim.MicConfig{}, reg)
		var out bytes.Buffer
		a.writeSummary(&out)
		if strings.Contains(out.String(), tc.quiet) {
			t.Errorf("a summary without %s mentions %q:\n%s", tc.metric, tc.quiet, out.String())
		}
		reg.Counter(tc.metric, "").Add(tc.add)
		out.Reset()
		a.writeSummary(&out)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("summary lacks %q:\n%s", tc.want, out.String())
		}
	}
}

// newOfflineAgent returns an agent (not running) on simulated devices, with
// mic as its microphone, whose gateway is a loopback port nobody listens
// on, so the link stays down.
func newOfflineAgent(t *testing.T, cfg config.Config, mic sim.MicConfig, reg *metrics.Registry) *agent {
	t.Helper()
	clk := clock.NewReal()
	m, err := sim.NewMic(mic, clk)
	if err != nil {
		t.Fatal(err)
	}
	spk, err := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gateway.URL, cfg.Gateway.Token = "ws://127.0.0.1:1/v1/robot", "x"
	a, err := newAgent(cfg, agentOptions{sim: true, mic: m, speaker: spk}, clk, reg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	return a
}
