package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/protocol"
)

// TestRobotReportedInterruptStopsResponse: a playback_progress with
// interrupted: true from the robot makes the gateway stop streaming that
// response (§7.3).
func TestRobotReportedInterruptStopsResponse(t *testing.T) {
	gw, srv, _ := newTestServer(t, Config{Token: "tok", Speed: 1, ChunkMS: 100, NoEcho: true})
	r := connect(t, srv)
	ss := gw.Sessions()[0]
	go ss.StreamTTS(context.Background(), make([]int16, 5*24000)) // 5 s, real time
	first := r.read()
	f, ok := first.(*binFrame)
	if !ok {
		t.Fatalf("first message %T, want a TTS frame", first)
	}
	r.sendJSON(&protocol.PlaybackProgress{Meta: protocol.Meta{EventID: "b-1"}, ResponseID: f.h.Stream, SamplesPlayed: 100, Interrupted: true})
	time.Sleep(300 * time.Millisecond) // frames already in flight
	frames := 0
	r.conn.SetReadDeadline(time.Now().Add(time.Second))
	for {
		mt, data, err := r.conn.ReadMessage()
		if err != nil {
			break
		}
		if mt == websocket.BinaryMessage {
			if h, _, err := protocol.ParseHeader(data); err == nil && h.Kind == protocol.KindTTSAudio {
				frames++
			}
		}
	}
	// At 100 ms chunks in real time, 1.3 s would bring 13 more frames.
	if frames > 4 {
		t.Fatalf("%d TTS frames after the robot reported the response interrupted", frames)
	}
}
