package main

import (
	"context"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
)

// BenchmarkEndToEndLatency runs the whole agent on simulated devices against
// the embedded gateway over loopback for a few seconds (run it with
// -benchtime=1x) and reports:
//   - mic_p50_us / mic_p99_us: end of a mic frame's capture → gateway receipt
//     (continuous mode, so no VAD pre-roll frames);
//   - tts_p50_us / tts_p99_us: a TTS chunk's receipt by the read pump → its
//     first sample handed to the device, with the gateway streaming 20 ms
//     chunks in real time (speed 1), so this is the jitter buffer's own delay
//     (the prebuffer it keeps in steady state).
func BenchmarkEndToEndLatency(b *testing.B) {
	for i := 0; i < b.N; i++ {
		clk := clock.NewReal()
		script := &sim.SpeechScript{Utterances: []sim.Utterance{{Silence: 300 * time.Millisecond}, {Speech: 1200 * time.Millisecond, Silence: 2 * time.Second}}}
		mic, _ := sim.NewMic(sim.MicConfig{Script: script, Seed: 3, Loop: true}, clk)
		spk, _ := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
		cfg := config.Default()
		cfg.Device.ID = "bench"
		cfg.Audio.Mode = capture.ModeContinuous
		gw := gateway.Config{Token: "sim-token", Speed: 1, NoEcho: true, NoGreeting: true, ChunkMS: 20}
		reg := metrics.NewRegistry()
		a, err := newAgent(cfg, agentOptions{sim: true, mic: mic, speaker: spk, gwConfig: &gw}, clk, reg, quietLog())
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		done := make(chan error, 1)
		go func() { done <- a.run(ctx) }()
		for !a.client.Up() {
			time.Sleep(5 * time.Millisecond)
		}
		// Let the continuous stream's start frame reach the gateway first:
		// the embedded gateway treats a start during a reply as barge-in.
		for len(a.gw.MicLatencies()) < 5 {
			time.Sleep(5 * time.Millisecond)
		}
		sess := a.gw.Sessions()[0]
		tone := make([]int16, 24000*4)
		for j := range tone {
			tone[j] = int16(6000 * sinApprox(j))
		}
		sess.StreamTTS(ctx, tone)
		<-done
		cancel()
		p50, p99, n := percentiles(a.gw.MicLatencies())
		if n == 0 {
			b.Fatal("no mic frames reached the gateway")
		}
		b.ReportMetric(float64(p50.Microseconds()), "mic_p50_us")
		b.ReportMetric(float64(p99.Microseconds()), "mic_p99_us")
		t50, t99, tn := a.player.Latencies()
		if tn == 0 {
			b.Fatal("no TTS reached the device")
		}
		b.ReportMetric(float64(t50.Microseconds()), "tts_p50_us")
		b.ReportMetric(float64(t99.Microseconds()), "tts_p99_us")
		b.ReportMetric(float64(reg.Value("robot_agent_playback_underruns_total")), "underruns")
		b.ReportMetric(float64(tn), "tts_slots")
	}
}
