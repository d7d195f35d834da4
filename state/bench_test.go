package state_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/state"
)

type nopEmitter struct{}

func (nopEmitter) Emit(protocol.Message) error { return nil }

// wireEmitter stands in for the uplink outbox: it assigns an event_id and
// encodes the message as it would go on the WebSocket.
type wireEmitter struct{ n int }

func (w *wireEmitter) Emit(m protocol.Message) error {
	w.n++
	m.Envelope().EventID = "e"
	_, err := protocol.Marshal(m)
	return err
}

// Cost of one change-driven state event (a GPIO edge) from the module to
// the Emitter.
func BenchmarkStateEventToEmit(b *testing.B) {
	pub := state.NewPublisher("gpio", nopEmitter{}, state.Deps{Clock: clock.NewFake()})
	v := json.RawMessage(`{"active":true}`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pub.Publish("gpio.button_head", v, time.Duration(i))
	}
}

// ... and on to the wire (JSON encoding of the control message).
func BenchmarkStateEventToWire(b *testing.B) {
	pub := state.NewPublisher("gpio", &wireEmitter{}, state.Deps{Clock: clock.NewFake()})
	v := json.RawMessage(`{"active":true}`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pub.Publish("gpio.button_head", v, time.Duration(i))
	}
}

// A coalesced vector value (imu.accel) that passes its deadband every time:
// encode + publish + wire.
func BenchmarkCoalescedEventToWire(b *testing.B) {
	pub := state.NewPublisher("imu", &wireEmitter{}, state.Deps{Clock: clock.NewFake()})
	c := state.NewCoalescer(pub, 0, state.Key{Name: "imu.accel", Fields: []string{"x", "y", "z"}, Deadband: 0.1, Decimals: 2})
	v := []float64{0.1, -0.2, 9.81}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v[0] = float64(i%2) * 5
		c.Update(0, time.Duration(i), v)
		c.Flush(time.Duration(i))
	}
}
