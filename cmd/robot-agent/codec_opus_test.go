//go:build opus && cgo

package main

import (
	"context"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/codec/opus"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestEndToEndOpus: with the embedded gateway choosing Opus, the voice
// loop works through the codec both ways: the gateway receives one Opus
// packet per 20 ms mic frame, a fraction of PCM's size, that decodes to the
// robot's speech; the robot plays the gateway's Opus TTS.
func TestEndToEndOpus(t *testing.T) {
	script := &sim.SpeechScript{Utterances: []sim.Utterance{{Silence: 500 * time.Millisecond}, {Speech: 1000 * time.Millisecond, Silence: 3 * time.Second}}}
	e := startE2E(t, script, gateway.Config{Token: "sim-token", Speed: 8, Codec: gateway.CodecOpus}, nil)
	waitUntil(t, 10*time.Second, "one response played to the end", func() bool {
		d, _ := e.a.progress.counts()
		return d >= 1
	})
	sess := e.a.gw.Sessions()[0]
	// A known TTS signal, compared sample by sample after the codec.
	ref := make([]int16, 24000)
	for i := range ref {
		ref[i] = int16(8000 * sinApprox(i))
	}
	before := len(e.spk.Samples())
	id := sess.StreamTTS(context.Background(), ref)
	waitUntil(t, 10*time.Second, "the tone played", func() bool {
		for _, ev := range e.a.gw.Events() {
			if p, ok := ev.Msg.(*protocol.PlaybackProgress); ok && p.ResponseID == id && (p.Done || p.Interrupted) {
				return true
			}
		}
		return false
	})
	e.stop(t)

	dec, _ := opus.NewDecoder(16000)
	buf := make([]int16, dec.MaxSamples())
	var frames, bytes, decoded int
	for _, ev := range e.a.gw.Events() {
		if ev.Header == nil || ev.Header.Kind != protocol.KindMicAudio || len(ev.Payload) == 0 {
			continue
		}
		frames++
		bytes += len(ev.Payload)
		n, err := dec.Decode(ev.Payload, buf)
		if err != nil {
			t.Fatalf("mic frame %d: %v", frames, err)
		}
		decoded += n
	}
	if frames < 50 || decoded != frames*320 {
		t.Fatalf("%d mic frames decoding to %d samples, want >= 50 frames of 320", frames, decoded)
	}
	if avg := bytes / frames; avg > 640/8 {
		t.Errorf("average mic packet %d bytes, want under 1/8 of PCM's 640", avg)
	}
	played := e.spk.Samples()[before:]
	t.Logf("played %d samples after the tone was sent; packets %d lost %d concealed %d bad %d stale %d", len(played), e.reg.Value("robot_agent_tts_packets_total"), e.reg.Value("robot_agent_tts_lost_packets_total"), e.reg.Value("robot_agent_tts_concealed_samples_total"), e.reg.Value("robot_agent_tts_bad_packets_total"), e.reg.Value("robot_agent_playback_stale_frames_dropped_total"))
	off, c := align(played, ref, 24000)
	t.Logf("mic: %d frames, %d bytes/frame; tone found in the played audio at %d with NCC %.3f", frames, bytes/frames, off, c)
	if c < 0.9 {
		t.Errorf("played tone NCC %.3f, want >= 0.9", c)
	}
	if n := e.reg.Value("robot_agent_tts_packets_total"); n < 50 {
		t.Errorf("%d TTS packets decoded", n)
	}
}
