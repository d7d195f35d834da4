package main

import (
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/duck"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

type countingMic struct{ n int }

func (c *countingMic) SendMic(*capture.Frame) bool { c.n++; return true }

type countingTTS struct{ interrupts int }

func (n *countingTTS) PushPCM(uint32, []byte) error { return nil }
func (n *countingTTS) EndResponse(uint32)           {}
func (n *countingTTS) Interrupt(id uint32) uint32   { n.interrupts++; return id }
func (n *countingTTS) ResetSession()                {}

type silentSink struct{}

func (silentSink) Format() hw.AudioFormat { return hw.TTSFormat }
func (silentSink) Write([]int16) error    { return nil }
func (silentSink) Close() error           { return nil }

// The wiring: an utterance start (and only a start) ducks the speaker, every
// frame still reaches the uplink, and an interrupt reaches both the player
// and the duck (which then stays down instead of restoring).
func TestDuckWiring(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	d, err := duck.New(silentSink{}, duckConfig{DepthDB: 12, HoldMS: 200, AttackMS: 10, ReleaseMS: 10}.config(), clk, reg)
	if err != nil {
		t.Fatal(err)
	}
	loud := make([]int16, 240)
	for i := range loud {
		loud[i] = 5000
	}
	up := &countingMic{}
	mic := duckOnStart{FrameSink: up, d: d}
	tts := &countingTTS{}
	out := duckingTTS{TTSSink: tts, d: d}
	d.Write(loud)
	for _, f := range []protocol.Flag{protocol.FlagContinue, protocol.FlagEnd} {
		mic.SendMic(&capture.Frame{Flag: f})
	}
	d.Write(loud)
	if d.Ducked() {
		t.Fatal("ducked without an utterance start")
	}
	mic.SendMic(&capture.Frame{Flag: protocol.FlagStart})
	d.Write(loud)
	if !d.Ducked() || up.n != 3 {
		t.Fatalf("after a start: ducked %v, frames to the uplink %d; want true, 3", d.Ducked(), up.n)
	}
	for range 10 { // 100 ms into the duck
		clk.Advance(10 * time.Millisecond)
		d.Write(loud)
	}
	out.Interrupt(7)
	for range 15 { // the reply still fading 250 ms after the start: past the duck's 200 ms hold
		clk.Advance(10 * time.Millisecond)
		d.Write(loud)
	}
	if tts.interrupts != 1 || !d.Ducked() || reg.Value(duck.MetricInterrupted) != 1 {
		t.Fatalf("interrupt: player got %d, ducked %v, interrupted metric %d", tts.interrupts, d.Ducked(), reg.Value(duck.MetricInterrupted))
	}
}
