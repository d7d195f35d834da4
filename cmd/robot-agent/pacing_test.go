package main

import (
	"context"
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
