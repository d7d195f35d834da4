package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
)

const gatewayUsage = `Usage: robot-agent gateway [flags]

Runs the embedded development gateway (protocol v1) on its own: robots
connect to ws://ADDR/v1/robot. It echoes each utterance back as TTS, sends an
interrupt when the robot speaks over a reply, acks and logs control events.
For development and tests only: it serves plain ws:// and should listen on
loopback.

Flags:
`

func cmdGateway(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, gatewayUsage); fs.PrintDefaults() }
	addr := fs.String("listen", "127.0.0.1:8765", "address to listen on")
	tokenFile := fs.String("token-file", "", "file holding the bearer token robots must present (default: accept any token)")
	ttsMode := fs.String("tts-mode", "binary", "send TTS as binary frames or base64 JSON")
	speed := fs.Float64("speed", 4, "TTS streaming speed relative to real time")
	noEcho := fs.Bool("no-echo", false, "do not answer utterances")
	codec := fs.String("codec", gateway.CodecPCM, "audio to choose for robots that offer it: pcm or opus (opus needs a binary built with -tags opus)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	recordVideo := fs.String("record-video", "", "write each session's H264 stream and JPEG images under this directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := newLogger(config.Log{Level: *logLevel, Format: "text"}, stderr)
	cfg := gateway.Config{TTSMode: *ttsMode, Speed: *speed, NoEcho: *noEcho, Codec: *codec}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintln(stderr, "robot-agent gateway:", err)
			return 2
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	reg := metrics.NewRegistry()
	clk := clock.NewReal()
	var hooks gateway.Hooks
	if *recordVideo != "" {
		rec, err := gateway.NewVideoRecorder(*recordVideo, clk)
		if err != nil {
			fmt.Fprintln(stderr, "robot-agent gateway:", err)
			return 2
		}
		defer rec.Close()
		hooks.OnVideo = rec.OnVideo
	}
	gw, err := gateway.New(cfg, clk, reg, log, hooks)
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent gateway:", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.Handle(gateway.Path, gw)
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { reg.WritePrometheus(w) })
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info("gateway listening", "url", "ws://"+*addr+gateway.Path)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "robot-agent gateway:", err)
		return 1
	}
	return 0
}
