package uplink

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/protocol"
)

// recTap records what the client tapped.
type recTap struct {
	mu   sync.Mutex
	up   []string // message types
	down []string
}

func (r *recTap) TapControl(up bool, msg []byte) {
	var m struct {
		Type string `json:"type"`
	}
	json.Unmarshal(msg, &m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if up {
		r.up = append(r.up, m.Type)
	} else {
		r.down = append(r.down, m.Type)
	}
}

func (r *recTap) has(up bool, typ string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.down
	if up {
		l = r.up
	}
	for _, t := range l {
		if t == typ {
			return true
		}
	}
	return false
}

// TestControlTapSeesBothDirections: the tap gets the hello exchange, a
// control event the robot sends and the gateway's ack of it.
func TestControlTapSeesBothDirections(t *testing.T) {
	tap := &recTap{}
	r := newRig(t, gateway.Config{Token: "t0ken"}, func(c *Config) { c.Tap = tap })
	waitFor(t, "session", r.client.Up)
	if err := r.client.Emit(state("button", 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ack", func() bool { return r.client.Outbox().Len() == 0 })
	waitFor(t, "tapped", func() bool {
		return tap.has(true, "hello") && tap.has(false, "hello") && tap.has(true, "state") && tap.has(false, "ack")
	})
}

// TestMicSendLatencyObserved: a mic frame written by the write pump lands
// in the mic send latency histogram, without allocating.
func TestMicSendLatencyObserved(t *testing.T) {
	r := newRig(t, gateway.Config{Token: "t0ken"}, nil)
	waitFor(t, "session", r.client.Up)
	h := r.reg.Histogram(MicSendLatencyMetric, "", nil)
	f := &capture.Frame{Utterance: 1, Flag: protocol.FlagStart, TS: r.client.clk.Mono() - 20*time.Millisecond, Samples: make([]int16, 320)}
	r.client.SendMic(f)
	waitFor(t, "observation", func() bool { return h.Count() > 0 })
	if s := h.Sum(); s < 0 || s > 5 {
		t.Fatalf("latency %v s", s)
	}
	frame := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Timestamp: 1000}, make([]byte, 640))
	if n := testing.AllocsPerRun(100, func() { r.client.observeMicSent(frame) }); n != 0 {
		t.Fatalf("observeMicSent allocates %v", n)
	}
}
