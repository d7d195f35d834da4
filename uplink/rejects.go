package uplink

import (
	"sync"

	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// rejectCounters counts the robot's control events that the gateway
// settled with an error, by error code:
// robot_agent_control_rejected_<code>_total. Codes not in the protocol's
// list are counted as "other", so a gateway cannot create metrics at will.
// Any goroutine.
type rejectCounters struct {
	reg *metrics.Registry
	mu  sync.Mutex
	by  map[string]*metrics.Counter
}

var knownCodes = []string{
	protocol.CodeBadFrame, protocol.CodeBadMessage, protocol.CodeUnknownType, protocol.CodeTooLarge,
	protocol.CodeUnsupported, protocol.CodeUnauthorized, protocol.CodeRateLimited, protocol.CodeUnknownSkill,
	protocol.CodeBadArgument, protocol.CodeDeviceError, protocol.CodeUnavailable, protocol.CodeInternal,
	protocol.CodeStaleResponse, protocol.CodeVersionMismatch,
}

func newRejectCounters(reg *metrics.Registry) *rejectCounters {
	return &rejectCounters{reg: reg, by: make(map[string]*metrics.Counter)}
}

func (r *rejectCounters) inc(code string) {
	known := false
	for _, k := range knownCodes {
		if k == code {
			known = true
			break
		}
	}
	if !known {
		code = "other"
	}
	r.mu.Lock()
	c, ok := r.by[code]
	if !ok {
		c = r.reg.Counter("robot_agent_control_rejected_"+code+"_total", "Control events the gateway settled with error code "+code+".")
		r.by[code] = c
	}
	r.mu.Unlock()
	c.Inc()
}
