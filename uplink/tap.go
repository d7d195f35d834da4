package uplink

import (
	"encoding/binary"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// ControlTap sees every control (text) message the client writes (up=true:
// hello, acks, progress, control events, resends) and reads (up=false), as
// the bytes on the wire. The flight recorder (package flightrec) is one.
// TapControl is called from the read pump and the write pump concurrently,
// on the fast lane's goroutines: it must not block, allocate or keep msg.
type ControlTap interface {
	TapControl(up bool, msg []byte)
}

// MicSendLatencyMetric is the histogram of mic frame end → frame written.
const MicSendLatencyMetric = "robot_agent_uplink_mic_send_latency_seconds"

func (c *Client) tap(up bool, msg []byte) {
	if c.cfg.Tap != nil {
		c.cfg.Tap.TapControl(up, msg)
	}
}

// observeMicSent records how long after its last sample a mic frame went
// out (write pump; the frame's header timestamp is its first sample on the
// capture clock, which is c.clk). It does not allocate.
func (c *Client) observeMicSent(frame []byte) {
	if len(frame) < protocol.HeaderSize {
		return
	}
	// The lane holds frames SendMic encoded itself: read the timestamp
	// (bytes 12..19, protocol/frame.go) without re-validating.
	ts := int64(binary.LittleEndian.Uint64(frame[12:]))
	end := time.Duration(ts)*time.Microsecond + time.Duration((len(frame)-protocol.HeaderSize)/2)*time.Second/16000
	c.micSendLatency.ObserveDuration(c.clk.Mono() - end)
}
