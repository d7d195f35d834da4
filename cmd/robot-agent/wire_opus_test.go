//go:build opus && cgo

package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// wsOverhead is the WebSocket framing of one message of n payload bytes:
// 2 bytes, +2 for 126..65535 bytes, +4 for the mask the client (robot)
// must apply.
func wsOverhead(n int, masked bool) int {
	h := 2
	if n >= 126 {
		h += 2
	}
	if masked {
		h += 4
	}
	return h
}

// BenchmarkWireBytes runs the `make run` conversation (simulated robot,
// scripted speech, the embedded gateway echoing every utterance as TTS,
// greetings, state) for WIRE_BENCH_FOR (default 20 s) with the embedded
// gateway choosing PCM, then Opus, and reports the audio bytes on the wire
// per minute as the gateway counted them: mic frames received, TTS frames
// sent, each with its 24-byte header and WebSocket framing.
func BenchmarkWireBytes(b *testing.B) {
	d := 20 * time.Second
	if s := os.Getenv("WIRE_BENCH_FOR"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	for _, codec := range []string{"pcm", "opus"} {
		b.Run(codec, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cfg := config.Default()
				cfg.Device.ID = "wire-bench"
				cfg.Sim.SpeakerWAV = ""
				ac := "audio_codec:\n  gateway: " + codec + "\n"
				if err := config.Decode(strings.NewReader(ac), &cfg, extraSections...); err != nil {
					b.Fatal(err)
				}
				reg := metrics.NewRegistry()
				a, err := newAgent(cfg, agentOptions{sim: true}, clock.NewReal(), reg, quietLog())
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), d)
				start := time.Now()
				a.run(ctx)
				cancel()
				el := time.Since(start)
				var micBytes, micFrames int
				for _, ev := range a.gw.Events() {
					if ev.Header != nil && ev.Header.Kind == protocol.KindMicAudio {
						n := protocol.HeaderSize + int(ev.Header.Length)
						micBytes += n + wsOverhead(n, true)
						micFrames++
					}
				}
				ws := a.gw.WireStats()
				ttsMsg, ttsFrames := int(ws.TTSBytes), int(ws.TTSFrames)
				ttsBytes := ttsMsg + 2*ttsFrames
				if codec == "pcm" {
					ttsBytes += 2 * ttsFrames // PCM chunks are >= 126 bytes
				}
				perMin := func(n int) float64 { return float64(n) / el.Minutes() / 1000 }
				b.ReportMetric(perMin(micBytes), "mic_kB/min")
				b.ReportMetric(perMin(ttsBytes), "tts_kB/min")
				b.ReportMetric(perMin(micBytes+ttsBytes), "audio_kB/min")
				b.ReportMetric(float64(micFrames)/el.Minutes(), "mic_frames/min")
				b.ReportMetric(float64(ttsFrames)/el.Minutes(), "tts_frames/min")
			}
		})
	}
}
