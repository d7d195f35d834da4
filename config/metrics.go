package config

import (
	"fmt"
	"net"
	"strconv"

	"github.com/robot-agent/robot-agent/config/field"
)

// DefaultMetricsListen is where /metrics is served unless metrics.listen
// says otherwise: loopback only, so it is on by default without exposing
// anything to the network. If this default port is taken at start-up the
// agent logs a warning and runs without /metrics; a port set explicitly
// must be free (start-up fails).
const DefaultMetricsListen = "127.0.0.1:9464"

// MetricsOff as metrics.listen disables the endpoint.
const MetricsOff = "off"

// Enabled reports whether the metrics endpoint is on.
func (m Metrics) Enabled() bool { return m.Listen != "" && m.Listen != MetricsOff }

// IsDefault reports whether metrics.listen is the built-in default.
func (m Metrics) IsDefault() bool { return m.Listen == DefaultMetricsListen }

// validate checks metrics.listen: off, or host:port with a numeric port.
func (m Metrics) validate() error {
	if !m.Enabled() {
		return nil
	}
	hint := "e.g. " + DefaultMetricsListen + ", or " + MetricsOff + " to disable"
	_, port, err := net.SplitHostPort(m.Listen)
	if err != nil {
		return field.New("metrics.listen", m.Listen, "not host:port", hint)
	}
	if p, perr := strconv.Atoi(port); perr != nil || p < 0 || p > 65535 {
		return field.New("metrics.listen", m.Listen, fmt.Sprintf("port %q is not a number in 0..65535", port), hint)
	}
	return nil
}
