package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
)

const gatewayUsage = `Usage: robot-agent gateway [flags]

Runs the embedded development gateway (protocol v1) on its own: robots
connect to ws://ADDR/v1/robot (wss:// with --tls-cert/--tls-key). It echoes
each utterance back as TTS, sends an interrupt when the robot speaks over a
reply, acks and logs control events. For development and tests only.

Once listening it prints the robots' URL (with the real port for :0) on
stdout. Off loopback it warns: use TLS, and a token (--token-file); robots
need gateway.allow_insecure_ws for plain ws:// to another host.

Flags:
`

func cmdGateway(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, gatewayUsage); fs.PrintDefaults() }
	addr := fs.String("listen", "127.0.0.1:8765", "address to listen on (port 0: any free port, printed)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token robots must present (default: ask for none)")
	ttsMode := fs.String("tts-mode", "binary", "send TTS as binary frames or base64 JSON")
	speed := fs.Float64("speed", 4, "TTS streaming speed relative to real time")
	noEcho := fs.Bool("no-echo", false, "do not answer utterances")
	codec := fs.String("codec", gateway.CodecPCM, "audio to choose for robots that offer it: pcm or opus (opus needs a binary built with -tags opus)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	goAway := fs.Duration("go-away-delay", time.Second, "on SIGTERM/SIGINT, tell robots to reconnect after this long (go_away; 0: no go_away)")
	goAwaySpread := fs.Duration("go-away-spread", 0, "add up to this much per-robot jitter to --go-away-delay")
	recordVideo := fs.String("record-video", "", "write each session's H264 stream, JPEG images and per-frame list (<session>-frames.tsv: seq, flag, mark bits, key, timestamps, size, offset) under this directory")
	tlsCert := fs.String("tls-cert", "", "serve wss:// with this PEM certificate (chain) ...")
	tlsKey := fs.String("tls-key", "", "... and this PEM private key")
	clientCA := fs.String("client-ca", "", "require robots to present a client certificate signed by a CA in this PEM file (mutual TLS)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitConfig
	}
	if fs.NArg() > 0 {
		return reportFailure(stderr, field.New("gateway", fs.Arg(0), "unexpected argument", "see robot-agent gateway -h"))
	}
	log := newLogger(config.Log{Level: *logLevel, Format: "text"}, stderr)
	cfg := gateway.Config{TTSMode: *ttsMode, Speed: *speed, NoEcho: *noEcho, Codec: *codec}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return reportFailure(stderr, field.New("--token-file", *tokenFile, "cannot read: "+unwrapPathErr(err), "give a readable file holding the token"))
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	tlsCfg, err := gatewayTLS(*tlsCert, *tlsKey, *clientCA)
	if err != nil {
		return reportFailure(stderr, err)
	}
	reg := metrics.NewRegistry()
	clk := clock.NewReal()
	var hooks gateway.Hooks
	if *recordVideo != "" {
		rec, err := gateway.NewVideoRecorder(*recordVideo, clk)
		if err != nil {
			return reportFailure(stderr, &failure{code: exitConfig, err: err, fix: "choose a writable --record-video directory"})
		}
		defer rec.Close()
		hooks.OnVideo = rec.OnVideo
	}
	gw, err := gateway.New(cfg, clk, reg, log, hooks)
	if err != nil {
		return reportFailure(stderr, &failure{code: exitConfig, err: err, fix: "see robot-agent gateway -h"})
	}
	// Bind first: "listening" is logged only once it is true.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return reportFailure(stderr, networkFailure(fmt.Errorf("gateway: cannot listen on %s: %w", *addr, unwrapOpError(err)),
			"choose a free address with --listen (port 0 picks one), or stop what listens there (ss -ltnp)"))
	}
	scheme := "ws"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		scheme = "wss"
	}
	mux := http.NewServeMux()
	mux.Handle(gateway.Path, gw)
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { reg.WritePrometheus(w) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		// TLS handshake failures (a robot without the right CA or client
		// certificate) go to the log, as warnings.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if *goAway > 0 {
			// Planned shutdown: robots leave now and come back after the
			// announced delay instead of discovering a dead link.
			n := gw.GoAway(sctx, "gateway shutting down", *goAway, *goAwaySpread)
			log.Info("gateway: robots told to go away", "robots", n, "reconnect_after", *goAway)
		}
		srv.Shutdown(sctx)
	}()
	bound := ln.Addr().(*net.TCPAddr)
	u := scheme + "://" + net.JoinHostPort(urlHost(bound), strconv.Itoa(bound.Port)) + gateway.Path
	log.Info("gateway listening", "url", u, "tls", tlsCfg != nil, "mtls", *clientCA != "", "token", cfg.Token != "")
	if !bound.IP.IsLoopback() {
		log.Warn("gateway: listening off loopback: robots and anyone else on the network can connect; this gateway is for development",
			"addr", bound.String(), "tls", tlsCfg != nil, "token", cfg.Token != "")
	}
	fmt.Fprintln(stdout, u)
	err = srv.Serve(ln)
	// The sessions (hijacked connections Shutdown does not track) end
	// here, after any go_away, before the command returns.
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ccancel()
	if cerr := gw.Close(cctx); cerr != nil {
		log.Warn("gateway: sessions did not end in time", "err", cerr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return reportFailure(stderr, networkFailure(fmt.Errorf("gateway: %w", err), "see the log above"))
	}
	return exitOK
}

// urlHost is the host robots on this machine can dial for a bound address:
// the address itself, or loopback for the unspecified address.
func urlHost(a *net.TCPAddr) string {
	if a.IP == nil || a.IP.IsUnspecified() {
		return "127.0.0.1"
	}
	return a.IP.String()
}

// gatewayTLS builds the server TLS configuration (nil: plain ws://).
func gatewayTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	var errs field.List
	if (certFile == "") != (keyFile == "") {
		errs.Add("--tls-cert", certFile, "--tls-cert and --tls-key go together", "give both for wss://, or neither")
	}
	if clientCA != "" && certFile == "" {
		errs.Add("--client-ca", clientCA, "mutual TLS needs a server certificate", "add --tls-cert and --tls-key")
	}
	if len(errs) > 0 || certFile == "" {
		return nil, errs.Err()
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		errs.Add("--tls-cert", certFile, "cannot load with --tls-key: "+unwrapPathErr(err), "give a PEM certificate and its matching PEM key")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if err == nil {
		cfg.Certificates = []tls.Certificate{cert}
	}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			errs.Add("--client-ca", clientCA, "cannot read: "+unwrapPathErr(err), "")
		case !pool.AppendCertsFromPEM(pem):
			errs.Add("--client-ca", clientCA, "no PEM certificate in the file", "give the robots' CA certificate in PEM")
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	return cfg, nil
}

// unwrapPathErr drops the path an *os.PathError repeats.
func unwrapPathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
