package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// startMetrics serves /metrics (Prometheus) and /healthz at metrics.listen
// (on by default on 127.0.0.1:9464; "off" disables). When the built-in
// default port is taken (a second agent, another exporter) the agent logs a
// warning and runs without the endpoint: monitoring must not stop a robot
// from talking. An address the user chose must be bindable: that is a
// start-up error naming metrics.listen.
func (a *agent) startMetrics() error {
	m := a.cfg.Metrics
	if !m.Enabled() {
		return nil
	}
	ln, err := net.Listen("tcp", m.Listen)
	if err != nil {
		if m.IsDefault() {
			hint := ""
			if errors.Is(err, syscall.EADDRINUSE) {
				hint = " (another robot-agent or exporter uses the port)"
			}
			a.log.Warn("metrics: default address unavailable"+hint+"; running without /metrics: set metrics.listen to a free host:port, or off",
				"listen", m.Listen, "err", err)
			return nil
		}
		return networkFailure(fmt.Errorf("metrics.listen: %q: cannot listen: %w", m.Listen, unwrapOpError(err)),
			"choose a free port with metrics.listen / --metrics-listen, or off, or stop what listens there (ss -ltnp)")
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.reg.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if a.client == nil || !a.client.Up() {
			http.Error(w, "gateway link down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	a.closers = append(a.closers, srv.Close)
	a.ops.metricsURL = "http://" + ln.Addr().String() + "/metrics"
	a.log.Info("metrics listening", "url", a.ops.metricsURL)
	return nil
}

// operatorParts are the agent's parts for the people running it: the
// metrics endpoint and the flight recorder with its support bundles.
type operatorParts struct {
	// metricsURL is where /metrics is served ("" when off or not bound).
	metricsURL string
	// support is the flight recorder and its bundle triggers (support.go).
	support *supportParts
}
