package uplink

import (
	"testing"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestFastLaneDoesNotAllocate: the robot's side of both fast-lane paths —
// a mic frame queued by the capture pump, and a TTS frame handed from the
// read pump to the jitter buffer — allocate nothing. (gorilla/websocket's
// own per-message reader is outside this path; see docs/benchmarks.md.)
func TestFastLaneDoesNotAllocate(t *testing.T) {
	clk := clock.NewReal()
	reg := metrics.NewRegistry()
	player, err := playback.New(playback.Config{Slots: 1024}, clk, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: "ws://127.0.0.1:1/v1/robot", DeviceID: "r", MicQueue: 4}, clk, reg, testLogger(t), player, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &capture.Frame{Utterance: 1, Flag: protocol.FlagContinue, Samples: make([]int16, 320)}
	if n := testing.AllocsPerRun(200, func() {
		f.Seq++
		c.SendMic(f)
		if _, ok := c.mic.peek(); ok {
			c.mic.release()
		}
	}); n != 0 {
		t.Fatalf("SendMic allocates %v times per frame", n)
	}
	tts := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, 960))
	fill := make([]int16, 480)
	if n := testing.AllocsPerRun(200, func() {
		c.handleBinary(tts)
		player.Fill(fill)
	}); n != 0 {
		t.Fatalf("TTS frame → jitter buffer allocates %v times per frame", n)
	}
}

// BenchmarkDownlinkTTSFrame measures the robot-side cost of one 20 ms TTS
// frame from the read pump into the jitter buffer (parse + push).
func BenchmarkDownlinkTTSFrame(b *testing.B) {
	clk := clock.NewReal()
	reg := metrics.NewRegistry()
	player, _ := playback.New(playback.Config{Slots: 1024}, clk, reg, nil)
	c, _ := New(Config{URL: "ws://127.0.0.1:1/v1/robot", DeviceID: "r"}, clk, reg, nil, player, nil)
	tts := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, 960))
	fill := make([]int16, 480)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.handleBinary(tts)
		player.Fill(fill)
	}
}
