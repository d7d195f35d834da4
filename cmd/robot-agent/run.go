package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/duck"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/logthrottle"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/uplink"
	"github.com/robot-agent/robot-agent/volume"
	"github.com/robot-agent/robot-agent/warmup"
)

const runUsage = `Usage: robot-agent run [flags]

Runs the agent: captures the microphone into 20 ms frames (with utterance
start/continue/end flags), streams them to the gateway, plays the gateway's
TTS through the jitter buffer, and relays control events both ways.

Configuration comes from defaults, then the YAML file (--config), then
ROBOT_AGENT_* environment variables, then these flags. The gateway token is
read from gateway.token_file or $CREDENTIALS_DIRECTORY/gateway-token, never
from the command line.

With --sim the mic and speaker are simulated (a generated speech-like script
or --mic-wav, and a speaker writing --speaker-wav); with --sim and no gateway
URL an embedded gateway is started in-process, which echoes every utterance
back as TTS and interrupts its reply when the robot speaks over it.

A failure prints one line per problem, "robot-agent: cause (fix)", and exits
2 (configuration), 3 (device), 4 (network: address in use) or 5 (internal
error); 0 after a clean stop.

Flags:
`

// runFlags are the command-line overrides of run.
type runFlags struct {
	configPath string
	sim        bool
	duration   time.Duration
	gatewayURL string
	deviceID   string
	mode       string
	micWAV     string
	speakerWAV string
	ttsMode    string
	logLevel   string
	logFormat  string
	metrics    string
	quiet      bool
}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, *flag.FlagSet, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	fs.StringVar(&f.configPath, "config", "", "YAML configuration file (default: none; packaged installs use /etc/robot-agent/config.yaml)")
	fs.BoolVar(&f.sim, "sim", false, "use simulated mic and speaker (and an embedded gateway when no gateway URL is set)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long and print a summary (0: run until SIGINT/SIGTERM)")
	fs.StringVar(&f.gatewayURL, "gateway-url", "", "gateway endpoint, wss://host/v1/robot (gateway.url)")
	fs.StringVar(&f.deviceID, "device-id", "", "robot device id (device.id; default: hostname)")
	fs.StringVar(&f.mode, "mode", "", "utterance mode: vad (local VAD) or continuous (gateway VAD) (audio.mode)")
	fs.StringVar(&f.micWAV, "mic-wav", "", "sim: play this WAV file as the microphone (sim.mic_wav)")
	fs.StringVar(&f.speakerWAV, "speaker-wav", "", "sim: write what the speaker plays to this WAV file (sim.speaker_wav)")
	fs.StringVar(&f.ttsMode, "tts-mode", "", "embedded gateway: send TTS as binary frames or base64 JSON (gateway.tts_mode)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (log.level)")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json (log.format)")
	fs.StringVar(&f.metrics, "metrics-listen", "", "serve Prometheus metrics and /healthz on host:port, or off (metrics.listen; default "+config.DefaultMetricsListen+")")
	fs.BoolVar(&f.quiet, "quiet", false, "do not print the summary at exit")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("run: unexpected argument %q", fs.Arg(0))
	}
	return f, fs, nil
}

// loadRunConfig merges defaults, file, environment and flags, validates the
// result and loads the token.
func loadRunConfig(f *runFlags, fs *flag.FlagSet, getenv func(string) string) (config.Config, error) {
	cfg, err := config.Load(f.configPath, extraSections...)
	if err != nil {
		return cfg, err
	}
	cfg.ApplyEnv(getenv)
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "gateway-url":
			cfg.Gateway.URL = f.gatewayURL
		case "device-id":
			cfg.Device.ID = f.deviceID
		case "mode":
			cfg.Audio.Mode = f.mode
		case "mic-wav":
			cfg.Sim.MicWAV = f.micWAV
		case "speaker-wav":
			cfg.Sim.SpeakerWAV = f.speakerWAV
		case "tts-mode":
			cfg.Gateway.TTSMode = f.ttsMode
		case "log-level":
			cfg.Log.Level = f.logLevel
		case "log-format":
			cfg.Log.Format = f.logFormat
		case "metrics-listen":
			cfg.Metrics.Listen = f.metrics
		}
	})
	if err := validateConfig(cfg, f.sim, getenv); err != nil {
		return cfg, err
	}
	// The token is optional: a gateway that asks for one and gets none
	// answers 401, which the uplink logs with the fix.
	if err := cfg.LoadToken(getenv, false); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	return slog.New(newLogHandler(c, w))
}

func newLogHandler(c config.Log, w io.Writer) slog.Handler {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// newThrottledLogger is the agent's logger: per-class rate limiting (a
// flood of one kind of line costs 10 lines and one "suppressed" summary per
// 10 s). Flush the handler at exit.
func newThrottledLogger(c config.Log, w io.Writer, clk clock.Clock, reg *metrics.Registry) (*slog.Logger, *logthrottle.Handler) {
	h := logthrottle.New(newLogHandler(c, w), clk, reg, logthrottle.Config{})
	return slog.New(h), h
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	f, fs, err := parseRunFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "robot-agent:", err)
		return 2
	}
	cfg, err := loadRunConfig(f, fs, os.Getenv)
	if err != nil {
		return reportFailure(stderr, err)
	}
	clk, reg := clock.NewReal(), metrics.NewRegistry()
	reg.RegisterRuntime()
	log, throttle := newThrottledLogger(cfg.Log, stderr, clk, reg)
	defer throttle.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go throttle.Run(ctx)
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	svc := newService(clk, log, reg)
	a, err := newAgent(cfg, agentOptions{sim: f.sim, svc: svc}, clk, reg, log)
	if err != nil {
		return reportFailure(stderr, err)
	}
	err = a.run(ctx)
	if !f.quiet {
		a.writeSummary(stdout)
	}
	if err != nil {
		return reportFailure(stderr, err)
	}
	return exitOK
}

type agentOptions struct {
	sim bool
	// Tests inject devices and an embedded gateway's options here.
	mic      hw.AudioSource
	speaker  hw.AudioSink
	gwConfig *gateway.Config
	// wrapTTS lets tests observe what the read pump hands the player.
	wrapTTS func(uplink.TTSSink) uplink.TTSSink
	// svc is the systemd integration (nil: none).
	svc *service
}

// agent is every running part of robot-agent, wired together.
type agent struct {
	cfg  config.Config
	opts agentOptions
	clk  clock.Clock
	reg  *metrics.Registry
	log  *slog.Logger

	codec    audioCodecConfig // audio_codec section (codec_config.go)
	gw       *gateway.Server
	gwSrv    *http.Server
	gwURL    string
	mic      hw.AudioSource
	speaker  hw.AudioSink
	aecRef   *aec.Reference // full duplex: the far-end reference (nil: no canceller)
	aecSrc   *aec.Source    // full duplex: the cancelling mic (nil: no canceller)
	aecTap   *aec.Tap       // full duplex: the speaker tap (nil: no canceller)
	ducker   *duck.Sink     // full duplex with local ducking (nil: off)
	duplex   duplexConfig   // the duplex section as setupEchoCanceller loaded it
	volume   *volume.Sink   // the robot's own volume, above the tap (playback.volume_db, skill audio.volume)
	player   *playback.Player
	pump     *capture.Pump
	client   *uplink.Client
	control  *controlHandler
	progress *progressReporter
	robot    *robotParts
	video    *videoPart
	closers  []func() error
	room     *roomKeeper // duplex.room_file, nil: off
	started  time.Time
	stopped  time.Time
	upAtStop bool // the gateway link was up when shutdown began
	// Operator features (metrics_server.go, support.go).
	ops operatorParts
}

// newAgent builds every part; on error it closes what it had opened and
// returns an error classified for the exit code (exit.go).
func newAgent(cfg config.Config, opts agentOptions, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*agent, error) {
	a := &agent{cfg: withAudioDefaults(cfg), opts: opts, clk: clk, reg: reg, log: log}
	if err := a.build(); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// build is newAgent's body: it opens and wires the parts, recording in
// a.closers how to close each.
func (a *agent) build() (err error) {
	cfg, opts, clk, reg, log := a.cfg, a.opts, a.clk, a.reg, a.log
	if a.codec, err = loadAudioCodec(cfg); err != nil {
		return err
	}
	codecs, err := a.codec.audioCodecs(cfg.Audio.FrameMS, log)
	if err != nil {
		return err
	}
	if cfg.Gateway.URL == "" {
		if err := a.startEmbeddedGateway(); err != nil {
			return err
		}
	}
	if err := a.openAudio(); err != nil {
		return err
	}
	tlsCfg, err := cfg.Gateway.TLSConfig()
	if err != nil {
		return err
	}
	aecSrc, err := a.setupEchoCanceller() // full duplex where built in (duplex.go)
	if err != nil {
		return err
	}
	// The robot's own volume sits above every tap (the echo canceller's
	// reference, the half-duplex gate's): the reference holds the voice at
	// the level the device plays, so a change of volume is not a new echo
	// path to the canceller (docs/audio.md "The robot's own volume").
	if a.volume, err = volume.New(a.speaker, cfg.Playback.VolumeDB, reg); err != nil {
		return err
	}
	a.speaker = a.volume
	var startup *warmup.Sink
	if aecSrc != nil {
		if startup, err = a.setupStartupSound(a.duplex); err != nil { // duplex.startup_sound (duplex.go)
			return err
		}
	} else if a.duplex.StartupSound != "" {
		log.Info("duplex: startup_sound unused: no echo canceller (half duplex)")
	}
	// The service watchdog pings only while the main loops run: the
	// capture loop gets audio back from the mic, the playback loop hands
	// periods to the speaker (both every few ms), the uplink beats each
	// second connected or not.
	a.mic = beatingSource{a.mic, opts.svc.heartbeat("capture", 10*time.Second)}
	a.speaker = beatingSink{a.speaker, opts.svc.heartbeat("playback", 10*time.Second)}
	if err := a.setupRecorder(); err != nil { // flight recorder: support.go
		return err
	}
	a.player, err = playback.New(playerConfig(cfg.Playback), clk, reg, log)
	if err != nil {
		return err
	}
	a.control = newControlHandler(log, reg)
	bootID := uplink.NewBootID()
	ucfg := uplink.Config{
		URL: cfg.Gateway.URL, Token: cfg.Gateway.Token, DeviceID: cfg.Device.ID,
		TLS: tlsCfg, AllowInsecureWS: cfg.Gateway.AllowInsecureWS,
		MicQueue:    cfg.Audio.MicQueueMS / cfg.Audio.FrameMS,
		MicFrameMax: 16 * cfg.Audio.FrameMS,
		Hello: protocol.RobotHello{
			Model: cfg.Device.Model, AgentVersion: version, FirmwareVersion: cfg.Device.FirmwareVersion,
			BootID:       bootID,
			Capabilities: baseCapabilities(),
			AudioUp:      protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: cfg.Audio.FrameMS},
			AudioDown:    []protocol.AudioParams{{Format: "pcm16le", SampleRate: 24000, Channels: 1}},
			// Pacing (docs/protocol.md §7.7): the gateway keeps unplayed
			// audio within what the jitter buffer can hold.
			PlaybackBufferMS: a.player.GuaranteedSamples() / 24,
		},
	}
	if a.gw != nil {
		ucfg.URL, ucfg.Token = a.gwURL, "sim-token"
	}
	ucfg.Heartbeat = opts.svc.heartbeat("uplink", 20*time.Second)
	// An interrupt also drops what the device itself has queued: the
	// player flushes the sink it runs on (hw.Flusher behind Unwrap
	// wrappers) itself, once, in Interrupt and ResetSession.
	var ttsOut uplink.TTSSink = a.player
	if a.ducker != nil {
		ttsOut = duckingTTS{TTSSink: ttsOut, d: a.ducker} // an interrupt keeps the duck (duplex.go)
	}
	tagger := newSessionTagger(ttsOut)
	var tts uplink.TTSSink = tagger
	if opts.wrapTTS != nil {
		tts = opts.wrapTTS(tts)
	}
	tts = a.recordTTS(tts)
	ucfg.Tap = a.controlTap(ucfg.Token)
	if ucfg.Spool, err = a.openSpool(); err != nil {
		return err
	}
	ucfg.Codecs = codecs
	tts = wrapTTSDecoder(codecs, tts, reg, log)
	a.client, err = uplink.New(ucfg, clk, reg, log, tts, a.control)
	if err != nil {
		return err
	}
	a.control.emit = a.client.Emit
	var micOut capture.FrameSink = a.client
	if a.ducker != nil {
		micOut = duckOnStart{FrameSink: a.client, d: a.ducker} // an utterance start ducks the robot (duplex.go)
	}
	a.pump, err = capture.NewPump(captureConfig(cfg.Audio), a.mic, micOut, clk, reg, log)
	if err != nil {
		return err
	}
	if aecSrc != nil {
		a.pump.SetOnsetGuard(aecSrc) // full duplex: the canceller's residual echo starts no utterance
		if startup != nil {
			a.pump.SetGate(startup) // no utterance while the start-up sound plays and fades
		}
	} else {
		a.pump.SetGate(a.halfDuplexGate()) // no self-interruption (audio_halfduplex.go)
	}
	a.progress = newProgressReporter(a.player, a.client, log)
	a.progress.sessions = tagger
	a.client.AddObserver(tagger)
	if err := a.setupRobot(); err != nil {
		if exitCode(err) == exitInternal {
			err = deviceFailure(err, "check the state section's pins and buses with 'robot-agent doctor' and the service user's gpio/i2c groups")
		}
		return err
	}
	if a.video, err = a.setupVideo(); err != nil {
		if exitCode(err) == exitInternal {
			err = deviceFailure(err, "check the camera with 'robot-agent devices' and 'robot-agent doctor', or set camera.enabled: false")
		}
		return err
	}
	if u, perr := url.Parse(ucfg.URL); perr == nil && u.Scheme == "ws" && !config.IsLoopback(u.Hostname()) {
		log.Warn("gateway.allow_insecure_ws: plain ws:// to a non-loopback gateway; audio and the token cross the network unencrypted (development only)", "url", ucfg.URL)
	}
	a.client.SetCapabilities(a.capabilities())
	if err := a.startMetrics(); err != nil { // metrics_server.go
		return err
	}
	a.startSupport()
	return nil
}

// playerConfig maps the playback section to the player's config.
func playerConfig(c config.Playback) playback.Config {
	return playback.Config{
		PrebufferMS:   c.PrebufferMS,
		FadeMS:        c.FadeMS,
		Slots:         pow2(c.BufferMS * (24000 / 1000) / playback.DefaultSlotSamples), // 24 samples per ms: no int32 overflow on armv7
		PeriodFrames:  c.PeriodMS * 24,
		MinDelayMS:    c.MinDelayMS,
		ConcealBudget: c.ConcealPct / 100,
	}
}

func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// baseCapabilities is what every agent does: mic up, TTS down (binary and
// base64) with playback progress.
func baseCapabilities() []string {
	return []string{protocol.CapMicAudio, protocol.CapTTSAudio, protocol.CapTTSBase64, protocol.CapPlaybackProgress}
}

// capabilities lists, for the hello, every message class this agent really
// sends or carries out with its configured parts (§6.1).
func (a *agent) capabilities() []string {
	caps := baseCapabilities()
	if a.robot != nil {
		caps = append(caps, protocol.CapState, protocol.CapFunctionCall, protocol.CapSkill)
		if a.robot.ids != nil {
			// The recogniser endpoint sends face_info and greet_signal;
			// greeting replies play like any response.
			caps = append(caps, protocol.CapFaceInfo, protocol.CapGreet)
		}
	}
	if a.video != nil {
		if a.video.cfg.H264.Enabled {
			caps = append(caps, protocol.CapVideoH264)
		}
		if a.video.cfg.Image.IntervalMS > 0 {
			caps = append(caps, protocol.CapVideoImage)
		}
	}
	return caps
}

func (a *agent) startEmbeddedGateway() error {
	gcfg := gateway.Config{Token: "sim-token", TTSMode: a.cfg.Gateway.TTSMode, Speed: a.cfg.Gateway.Speed,
		// After greeting someone, blink the simulated robot's eyes: a skill
		// that goes through the robot's safety arbiter to a GPIO output.
		GreetSkill: &protocol.Skill{Skill: "gpio.blink", Args: json.RawMessage(`{"pin":"led_eyes","times":3,"period_ms":200}`)},
		// In continuous mode the gateway finds the utterances.
		ServerVAD: a.cfg.Audio.Mode == capture.ModeContinuous,
		Codec:     a.codec.Gateway}
	if a.opts.gwConfig != nil {
		gcfg = *a.opts.gwConfig
	}
	gw, err := gateway.New(gcfg, a.clk, metrics.NewRegistry(), embeddedGatewayLog(a.log), gateway.Hooks{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return networkFailure(fmt.Errorf("embedded gateway: cannot listen on loopback: %w", err), "check that the loopback interface is up")
	}
	a.gw = gw
	a.gwSrv = &http.Server{Handler: gw, ReadHeaderTimeout: 5 * time.Second}
	a.gwURL = "ws://" + ln.Addr().String() + gateway.Path
	go a.gwSrv.Serve(ln)
	a.closers = append(a.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// Shutdown stops the listener; the WebSocket sessions it does not
		// track end in gw.Close, which waits for their goroutines, so none
		// logs after run returns.
		return errors.Join(a.gwSrv.Shutdown(ctx), gw.Close(ctx))
	})
	a.log.Info("embedded gateway listening", "url", a.gwURL)
	return nil
}

// openAudio picks the mic and speaker: injected (tests), simulated (--sim),
// or real devices (builds with PortAudio).
func (a *agent) openAudio() error {
	if a.opts.mic != nil && a.opts.speaker != nil {
		a.mic, a.speaker = a.opts.mic, a.opts.speaker
		return nil
	}
	if !a.opts.sim {
		mic, spk, err := openRealAudioWith(a.cfg, a.clk, a.reg, a.log)
		if err != nil {
			if exitCode(err) == exitInternal {
				err = deviceFailure(err, "list the devices with 'robot-agent devices', set audio_devices.input/output, check the service user's audio group; or use --sim")
			}
			return err
		}
		a.mic, a.speaker = mic, spk
		a.closers = append(a.closers, mic.Close, spk.Close)
		return nil
	}
	mcfg := sim.MicConfig{Seed: 1}
	if a.cfg.Sim.MicWAV != "" {
		mcfg.WAVPath = a.cfg.Sim.MicWAV
	} else {
		mcfg.Script = demoScript(a.cfg.Sim)
		mcfg.Loop = true
	}
	echo, err := simRoom(a.cfg) // the simulated speaker is heard by the simulated mic (duplex.go)
	if err != nil {
		return err
	}
	mcfg.Room = echo
	mic, err := sim.NewMic(mcfg, a.clk)
	if err != nil {
		return deviceFailure(err, "check sim.mic_wav / --mic-wav")
	}
	if dir := filepath.Dir(a.cfg.Sim.SpeakerWAV); a.cfg.Sim.SpeakerWAV != "" && dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return deviceFailure(fmt.Errorf("sim.speaker_wav %q: %w", a.cfg.Sim.SpeakerWAV, err), "choose a writable path with --speaker-wav")
		}
	}
	spk, err := sim.NewSpeaker(sim.SpeakerConfig{WAVPath: a.cfg.Sim.SpeakerWAV, PeriodFrames: a.cfg.Playback.PeriodMS * 24, Room: echo}, a.clk)
	if err != nil {
		mic.Close()
		return deviceFailure(err, "choose a writable path with --speaker-wav")
	}
	a.mic, a.speaker = mic, spk
	if echo != nil {
		a.speaker = newSimTapped(a, spk) // half-duplex gate unless an echo canceller takes over
	}
	a.closers = append(a.closers, mic.Close, spk.Close)
	return nil
}

// demoScript gives two normal turns and then one where the robot's user
// talks over the reply (1.4 s after their words end: about 0.7 s into the
// robot's third answer), so a run shows both full answers and a barge-in.
// Not the second answer: after start the echo canceller and its guards
// need some seconds of the robot's voice before a user who talks over it
// is reliably heard (docs/benchmarks.md, "make run's barge-in").
func demoScript(s config.Sim) *sim.SpeechScript {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return &sim.SpeechScript{Utterances: []sim.Utterance{
		{Speech: 0, Silence: ms(800)}, // room noise first: the VAD learns the floor
		{Speech: ms(s.SpeechMS), Silence: ms(s.SilenceMS)},
		{Speech: ms(s.SpeechMS), Silence: ms(s.SilenceMS)},
		{Speech: ms(s.SpeechMS), Silence: ms(1400)},
		{Speech: ms(s.SpeechMS * 2 / 3), Silence: ms(s.SilenceMS)},
	}}
}

// run starts every loop and blocks until ctx is done, then shuts down in
// order: capture (sends the end flag), uplink (drains, close frame),
// playback, devices, embedded gateway.
func (a *agent) run(ctx context.Context) error {
	a.started = time.Now()
	defer func() { a.stopped = time.Now() }()
	upCtx, upCancel := context.WithCancel(context.Background())
	playCtx, playCancel := context.WithCancel(context.Background())
	defer upCancel()
	defer playCancel()
	errs := make(chan error, 4)
	upDone := make(chan struct{})
	go func() { defer close(upDone); errs <- a.client.Run(upCtx) }()
	var play sync.WaitGroup
	play.Add(2)
	go func() {
		defer play.Done()
		if err := a.player.Run(playCtx, a.speaker); err != nil && !errors.Is(err, context.Canceled) {
			errs <- deviceFailure(fmt.Errorf("playback: %w", err), "check the speaker ('robot-agent devices', 'robot-agent doctor'); the service restarts the agent")
		}
	}()
	go func() { defer play.Done(); a.progress.run(playCtx) }()
	a.robot.start(a)
	a.video.start(a)
	svcCtx, svcCancel := context.WithCancel(context.Background())
	defer svcCancel()
	go a.opts.svc.run(svcCtx)
	if a.room != nil {
		go a.room.run(svcCtx)
	}
	a.opts.svc.ready()

	capErr := a.pump.Run(ctx)
	if capErr != nil && !errors.Is(capErr, context.Canceled) && ctx.Err() == nil {
		a.log.Error("capture stopped", "err", capErr)
		errs <- deviceFailure(capErr, "check the microphone ('robot-agent devices', 'robot-agent doctor'); the service restarts the agent")
	}
	a.upAtStop = a.client.Up()
	a.log.Info("shutting down: capture stopped, draining uplink")
	a.opts.svc.stopping()
	svcCancel()
	a.robot.stop()
	a.video.stop()
	upCancel()
	select {
	case <-upDone:
	case <-time.After(4 * time.Second):
		a.log.Warn("shutdown: uplink did not stop within 4 s")
	}
	playCancel()
	stopped := make(chan struct{})
	go func() { play.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		a.log.Warn("shutdown: playback did not stop within 1 s")
	}
	a.close()
	// errs is not closed: a part that did not stop in time may still
	// send its error later (it then lands in the buffer, or its
	// goroutine waits), and a send on a closed channel would panic.
	var first error
	for {
		select {
		case err := <-errs:
			if err != nil && first == nil {
				first = err
			}
			continue
		default:
		}
		return first
	}
}

func (a *agent) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			a.log.Warn("close", "err", err)
		}
	}
	a.closers = nil
}

// unwrapOpError drops the "listen tcp ADDR:" prefix a *net.OpError repeats.
func unwrapOpError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
