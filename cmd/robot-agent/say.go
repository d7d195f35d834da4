package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/portaudio"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
)

const sayUsage = `Usage: robot-agent say [flags] FILE.wav     (alias: play)

Plays a WAV file through the configured output device (audio_devices.output,
ROBOT_AGENT_AUDIO_OUTPUT) with the agent's own player: the file is mixed to
mono and resampled to the player's 24 kHz, and the device layer converts to
the device's rate as during a run. For installers: check the speaker, its
level and the device choice without a gateway. Stop the service first if it
holds the device (sudo systemctl stop robot-agent).

Flags:
`

func cmdSay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sayUsage); fs.PrintDefaults() }
	cfgPath := fs.String("config", defaultConfigIfPresent(), "YAML configuration file (for audio_devices.* and playback.*)")
	simOut := fs.Bool("sim", false, "play into the simulated speaker (writes --speaker-wav) instead of a real device")
	speakerWAV := fs.String("speaker-wav", "out/said.wav", "with --sim: where the simulated speaker writes what it played")
	gainDB := fs.Float64("gain-db", 0, "gain applied to the file in dB (negative to attenuate); clipped at full scale")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitConfig
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "robot-agent: say: "+format+"\n", a...)
		return code
	}
	if fs.NArg() != 1 {
		return fail(exitConfig, "want one WAV file (robot-agent say FILE.wav)")
	}
	path := fs.Arg(0)
	cfg, err := config.Load(*cfgPath, extraSections...)
	if err == nil {
		cfg.ApplyEnv(os.Getenv)
		err = cfg.Validate()
	}
	if err != nil {
		return fail(exitConfig, "%s", oneLine(err))
	}
	audio, err := wav.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fail(exitConfig, "%s: no such file", path)
		}
		return fail(exitConfig, "%s: not a playable WAV file: %s", path, oneLine(err))
	}
	samples, err := toTTSFormat(audio, *gainDB)
	if err != nil {
		return fail(exitConfig, "%s: %s", path, oneLine(err))
	}

	log := newLogger(config.Log{Level: "warn", Format: "text"}, stderr)
	clk, reg := clock.NewReal(), metrics.NewRegistry()
	var spk hw.AudioSink
	device := ""
	if *simOut {
		if dir := filepath.Dir(*speakerWAV); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(exitDevice, "--speaker-wav %s: %s", *speakerWAV, oneLine(err))
			}
		}
		s, err := sim.NewSpeaker(sim.SpeakerConfig{WAVPath: *speakerWAV, PeriodFrames: cfg.Playback.PeriodMS * 24}, clk)
		if err != nil {
			return fail(exitDevice, "simulated speaker: %s", oneLine(err))
		}
		spk, device = s, "simulated speaker → "+*speakerWAV
	} else {
		s, name, err := openRealSpeaker(cfg, clk, reg, log)
		if err != nil {
			return fail(exitDevice, "%s", oneLine(err))
		}
		spk, device = s, name
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	played, err := playOnce(ctx, samples, spk, cfg, clk, reg, log)
	if cerr := spk.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fail(exitDevice, "%s: %s", device, oneLine(err))
	}
	fmt.Fprintf(stdout, "played %s (%.2f s, %d Hz %d ch → 24000 Hz mono) on %s\n",
		path, float64(played)/float64(hw.TTSFormat.SampleRate), audio.SampleRate, audio.Channels, device)
	return 0
}

// defaultConfigIfPresent is the packaged config when it exists, so `sudo
// robot-agent say x.wav` on a robot uses the service's device choice.
func defaultConfigIfPresent() string {
	const p = "/etc/robot-agent/config.yaml"
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

func oneLine(err error) string {
	s := err.Error()
	for i := range s {
		if s[i] == '\n' {
			return s[:i] + " (and more)"
		}
	}
	return s
}

// toTTSFormat mixes a to mono, applies gainDB and resamples to the
// player's rate.
func toTTSFormat(a wav.Audio, gainDB float64) ([]int16, error) {
	if a.Frames() == 0 {
		return nil, errors.New("the file holds no audio")
	}
	g := math.Pow(10, gainDB/20)
	mono := make([]int16, a.Frames())
	for i := range mono {
		var sum float64
		for c := 0; c < a.Channels; c++ {
			sum += float64(a.Samples[i*a.Channels+c])
		}
		v := math.Round(sum / float64(a.Channels) * g)
		mono[i] = int16(max(-32768, min(32767, v)))
	}
	rate := hw.TTSFormat.SampleRate
	if a.SampleRate == rate {
		return mono, nil
	}
	r, err := resample.New(a.SampleRate, rate, resample.QualityDefault)
	if err != nil {
		return nil, err
	}
	// Pad with the filter's delay so the end of the file comes out too.
	pad := int(math.Ceil(r.Delay()*float64(a.SampleRate)/float64(rate))) + 1
	in := append(mono, make([]int16, pad)...)
	out := make([]int16, r.OutLen(len(in)))
	n := r.Process(out, in)
	skip := min(n, int(math.Round(r.Delay())))
	end := min(n, skip+int(int64(a.Frames())*int64(rate)/int64(a.SampleRate)))
	return out[skip:end], nil
}

// playOnce plays samples as one response through a player on spk and
// returns when its last sample reached the device (plus the device's own
// buffer), the context ends, or the device fails.
func playOnce(ctx context.Context, samples []int16, spk hw.AudioSink, cfg config.Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (int64, error) {
	player, err := playback.New(playerConfig(cfg.Playback), clk, reg, log)
	if err != nil {
		return 0, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- player.Run(runCtx, spk) }()

	const id = 1
	capacity := cfg.Playback.BufferMS * 24 // samples the jitter buffer holds
	chunk := make([]byte, 2*playback.DefaultSlotSamples*10)
	var result *playback.Event
	for off := 0; off < len(samples); {
		if player.Depth()+len(chunk)/2 > capacity/2 { // keep well below full
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case err := <-runErr:
				return 0, err
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		n := min(len(chunk)/2, len(samples)-off)
		pcm.Int16ToBytes(chunk, samples[off:off+n])
		if err := player.PushPCM(id, chunk[:2*n]); err != nil {
			return 0, err
		}
		off += n
	}
	player.EndResponse(id)
	for result == nil {
		player.DrainEvents(func(e playback.Event) {
			if e.ResponseID == id {
				ev := e
				result = &ev
			}
		})
		if result != nil {
			break
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case err := <-runErr:
			if err == nil {
				err = errors.New("player stopped")
			}
			return 0, err
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The last sample is in the device's queue: let it be heard.
	if lr, ok := spk.(hw.LatencyReporter); ok {
		if d := lr.DeviceLatency(); d > 0 && d < 2*time.Second {
			time.Sleep(d)
		}
	}
	return result.SamplesPlayed, nil
}

// openRealSpeaker opens only the output device of the audio_devices
// section (a PortAudio build; otherwise the stub's "not built in" error).
func openRealSpeaker(cfg config.Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (hw.AudioSink, string, error) {
	ad, err := loadAudioDevices(cfg, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	h, err := portaudio.NewHost(portaudio.HostConfig{Clock: clk, Log: log, Metrics: reg, RetryMax: ad.RetryMax()})
	if err != nil {
		return nil, "", fmt.Errorf("audio output: %w", err)
	}
	// The agent starts without a missing device and waits for it (hot
	// plug); an installer's test must fail instead.
	if _, err := portaudio.Match(h.Devices(), ad.Output, true); err != nil {
		h.Close()
		return nil, "", fmt.Errorf("audio_devices.output: %w", err)
	}
	sink, err := h.NewSink(ad.Sink(cfg.Playback.FadeMS))
	if err != nil {
		h.Close()
		return nil, "", fmt.Errorf("audio_devices.output %s: %w", orDefault(ad.Output), err)
	}
	return &hostSink{Sink: sink, h: h}, "output " + orDefault(ad.Output), nil
}

// hostSink closes the host with the sink.
type hostSink struct {
	*portaudio.Sink
	h *portaudio.Host
}

func (s *hostSink) Close() error {
	err := s.Sink.Close()
	s.h.Close()
	return err
}
