package main

import (
	"log/slog"

	"github.com/robot-agent/robot-agent/logthrottle"
)

// embeddedGatewayLog is the embedded (demo) gateway's logger: it logs every
// event it receives, which is what make run is for, so it bypasses the
// agent's per-message rate limit.
func embeddedGatewayLog(log *slog.Logger) *slog.Logger {
	if th, ok := log.Handler().(*logthrottle.Handler); ok {
		log = slog.New(th.Inner())
	}
	return log.With("component", "embedded-gateway")
}
