package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestPacingKeepsAheadGatewayWithinBuffer: with a small robot buffer
// (1 s cap, 0.5 s advertised) and a gateway streaming 10x faster than real
// time, a 4 s reply plays whole: the gateway paces to the advertised buffer
// and nothing overflows. (The same reply without pacing would need 3.6 s.)
func TestPacingKeepsAheadGatewayWithinBuffer(t *testing.T) {
	e := startE2E(t, &sim.SpeechScript{}, gateway.Config{Token: "sim-token", Speed: 10, NoEcho: true}, func(c *config.Config) {
		c.Playback.BufferMS = 1000
	})
	waitUntil(t, 5*time.Second, "the robot online", func() bool { return len(e.a.gw.Sessions()) == 1 })
	sess := e.a.gw.Sessions()[0]
	if got := sess.Hello.PlaybackBufferMS; got < 400 || got > 1000 {
		t.Fatalf("hello playback_buffer_ms = %d, want about 500 (half the 1 s cap)", got)
	}
	pcm := make([]int16, 4*24000)
	for i := range pcm {
		pcm[i] = int16(1000 + i%7)
	}
	id := sess.StreamTTS(context.Background(), pcm)
	var final *protocol.PlaybackProgress
	waitUntil(t, 15*time.Second, "the final playback_progress", func() bool {
		for _, ev := range e.a.gw.Events() {
			if p, ok := ev.Msg.(*protocol.PlaybackProgress); ok && p.ResponseID == id && (p.Done || p.Interrupted) {
				final = p
				return true
			}
		}
		return false
	})
	if !final.Done || final.Interrupted || final.LostSamples != 0 || final.SamplesPlayed != int64(len(pcm)) {
		t.Fatalf("final progress %+v, want done with %d samples and nothing lost", final, len(pcm))
	}
	if lost := e.reg.Value("robot_agent_playback_overflow_dropped_samples_total"); lost != 0 {
		t.Fatalf("%d samples lost to overflow", lost)
	}
	if peak := e.a.player.PeakDepth(); peak > int64(e.a.player.CapacitySamples()) {
		t.Fatalf("peak %d above cap", peak)
	}
}

// TestOverflowReportedNotDone: a gateway that ignores pacing overflows a
// small robot buffer. The robot tells it buffer_overflow (not bad_frame),
// the final playback_progress is interrupted with lost_samples (never
// done), and the metrics and the run summary show the loss and the peak.
func TestOverflowReportedNotDone(t *testing.T) {
	e := startE2E(t, &sim.SpeechScript{}, gateway.Config{Token: "sim-token", Speed: 10, NoEcho: true, NoPacing: true}, func(c *config.Config) {
		c.Playback.BufferMS = 1000
	})
	waitUntil(t, 5*time.Second, "the robot online", func() bool { return len(e.a.gw.Sessions()) == 1 })
	pcm := make([]int16, 4*24000)
	for i := range pcm {
		pcm[i] = int16(1000 + i%7)
	}
	id := e.a.gw.Sessions()[0].StreamTTS(context.Background(), pcm)
	var final *protocol.PlaybackProgress
	var overflowErr *protocol.Error
	waitUntil(t, 15*time.Second, "the final playback_progress and the error", func() bool {
		for _, ev := range e.a.gw.Events() {
			switch m := ev.Msg.(type) {
			case *protocol.PlaybackProgress:
				if m.ResponseID == id && (m.Done || m.Interrupted) {
					final = m
				}
			case *protocol.Error:
				if m.Code != protocol.CodeBadFrame {
					overflowErr = m
				} else {
					t.Fatalf("robot said bad_frame: %+v", m)
				}
			}
		}
		return final != nil && overflowErr != nil
	})
	if overflowErr.Code != protocol.CodeBufferOverflow {
		t.Errorf("error code %q, want buffer_overflow", overflowErr.Code)
	}
	if final.Done || !final.Interrupted || final.LostSamples <= 0 || final.SamplesPlayed+final.LostSamples != int64(len(pcm)) {
		t.Fatalf("final progress %+v: want interrupted, not done, played + lost = %d", final, len(pcm))
	}
	if got := e.reg.Value("robot_agent_playback_overflow_dropped_samples_total"); got != final.LostSamples {
		t.Errorf("overflow metric %d, final report says %d lost", got, final.LostSamples)
	}
	if e.reg.Value("robot_agent_playback_truncated_responses_total") != 1 {
		t.Errorf("truncated responses metric = %d, want 1", e.reg.Value("robot_agent_playback_truncated_responses_total"))
	}
	var sum strings.Builder
	e.a.stopped = time.Now()
	e.a.writeSummary(&sum)
	if !strings.Contains(sum.String(), fmt.Sprintf("%d samples lost to overflow in 1 response(s)", final.LostSamples)) ||
		!strings.Contains(sum.String(), "buffer:    peak ") {
		t.Errorf("summary does not report the loss:\n%s", sum.String())
	}
}
