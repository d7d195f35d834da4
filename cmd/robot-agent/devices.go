package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/camera"
	"github.com/robot-agent/robot-agent/hw/portaudio"
	"github.com/robot-agent/robot-agent/metrics"
)

const devicesUsage = `Usage: robot-agent devices [--json]

Lists the audio input and output devices PortAudio sees, with their default
sample rates, channel counts and latencies. Select devices in the config
(audio_devices.input / audio_devices.output, or ROBOT_AGENT_AUDIO_INPUT /
ROBOT_AGENT_AUDIO_OUTPUT) by name or a unique part of it; the ALSA
"(hw:N,M)" suffix may be left out so the choice survives USB re-enumeration.

Flags:
`

func cmdDevices(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() { fmt.Fprint(stderr, devicesUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitConfig
	}
	// Audio devices and cameras are listed independently: a binary without
	// one kind still lists the other, and says why the first is missing.
	status := 0
	var devs []portaudio.Device
	h, audioErr := portaudio.NewHost(portaudio.HostConfig{})
	if audioErr == nil {
		devs = h.Devices()
		h.Close()
		portaudio.SortDevices(devs)
	} else {
		fmt.Fprintln(stderr, "robot-agent devices: audio:", audioErr)
		status = exitDevice
	}
	if *asJSON {
		cams, camErr := camera.List()
		if camErr != nil {
			fmt.Fprintln(stderr, "robot-agent devices: cameras:", camErr)
			status = exitDevice
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Audio   []portaudio.Device `json:"audio"`
			Cameras []camera.Info      `json:"cameras"`
		}{devs, cams}); err != nil {
			fmt.Fprintln(stderr, "robot-agent devices:", err)
			return exitInternal
		}
		return status
	}
	if audioErr == nil {
		writeDeviceTable(stdout, devs)
		fmt.Fprintln(stdout)
	}
	if err := listCameras(stdout); err != nil {
		fmt.Fprintln(stderr, "robot-agent devices: cameras:", err)
		status = exitDevice
	}
	return status
}

func writeDeviceTable(w io.Writer, devs []portaudio.Device) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintln(w, portaudio.Version())
	for _, output := range []bool{false, true} {
		title, key := "Input devices", "audio_devices.input"
		if output {
			title, key = "Output devices", "audio_devices.output"
		}
		fmt.Fprintf(w, "\n%s (%s):\n", title, key)
		n := 0
		for _, d := range devs {
			if d.Has(output) {
				n++
			}
		}
		if n == 0 {
			fmt.Fprintln(w, "  (none)")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  \tNAME\tHOST API\tCHANNELS\tDEFAULT RATE\tLATENCY LOW/HIGH (ms)")
		for _, d := range devs {
			if !d.Has(output) {
				continue
			}
			mark, ch, lo, hi := " ", d.MaxInputChannels, d.DefaultLowInputLatency, d.DefaultHighInputLatency
			if output {
				ch, lo, hi = d.MaxOutputChannels, d.DefaultLowOutputLatency, d.DefaultHighOutputLatency
			}
			if (output && d.DefaultOutput) || (!output && d.DefaultInput) {
				mark = "*"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d Hz\t%s / %s\n", mark, d.Name, d.HostAPI, ch, d.DefaultSampleRate, ms(lo), ms(hi))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\n* system default (used when the config names no device).")
}

// openRealAudio opens the configured real mic and speaker with the real
// clock and a private metrics registry (tests; run uses openRealAudioWith).
func openRealAudio(cfg config.Config, log *slog.Logger) (hw.AudioSource, hw.AudioSink, error) {
	return openRealAudioWith(cfg, clock.NewReal(), nil, log)
}

// openRealAudioWith opens the real mic and speaker of the audio_devices
// config section through PortAudio. Missing devices do not fail: they
// start degraded (silence in, audio discarded out, paced by clk) and are
// picked up when they appear. It fails for a binary built without
// PortAudio, bad configuration or an ambiguous device name.
func openRealAudioWith(cfg config.Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (hw.AudioSource, hw.AudioSink, error) {
	ad, err := loadAudioDevices(cfg, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	mic, spk, err := openAudioDevices(ad, cfg.Playback.FadeMS, clk, reg, log)
	if err != nil {
		return nil, nil, err
	}
	return mic, spk, nil
}

// openAudioDevices opens a PortAudio host with one Source (16 kHz mono) and
// one Sink (24 kHz mono); the host closes with the second of them.
func openAudioDevices(ad audioDevicesConfig, fadeMS int, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*realMic, *realSpeaker, error) {
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	h, err := portaudio.NewHost(portaudio.HostConfig{Clock: clk, Log: log, Metrics: reg, RetryMax: ad.RetryMax()})
	if err != nil {
		return nil, nil, err // "portaudio: ..." names itself
	}
	sink, err := h.NewSink(ad.Sink(fadeMS))
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("audio_devices.output: %w", err)
	}
	src, err := h.NewSource(ad.Source())
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("audio_devices.input: %w", err)
	}
	ref := &hostRef{h: h}
	ref.n.Store(2)
	tap := newSpeechTap(clk, sink, sink.Format().SampleRate, time.Duration(ad.HalfDuplexTailMS)*time.Millisecond)
	spk := &realSpeaker{Sink: sink, tap: tap, mode: ad.HalfDuplex, ref: ref}
	mic := &realMic{Source: src, ref: ref}
	if ad.HalfDuplex == halfDuplexMute {
		mic.mute = tap
	}
	if log != nil {
		log.Info("real audio devices", "input", orDefault(ad.Input), "output", orDefault(ad.Output),
			"half_duplex", ad.HalfDuplex, "tail_ms", ad.HalfDuplexTailMS, "output_buffer_ms", ad.OutputBufferMS)
	}
	return mic, spk, nil
}

func orDefault(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(system default)"
	}
	return s
}

// hostRef closes the PortAudio host when its last device closes.
type hostRef struct {
	h *portaudio.Host
	n atomic.Int32
}

func (r *hostRef) release() {
	if r.n.Add(-1) == 0 {
		r.h.Close()
	}
}

// realSpeaker is the PortAudio Sink as the agent uses it: writes pass
// through the half-duplex speech tap; Flush, Latency and PeriodFrames are
// the Sink's.
type realSpeaker struct {
	*portaudio.Sink
	tap  *speechTap
	mode string
	ref  *hostRef
	once sync.Once
}

func (s *realSpeaker) Write(p []int16) error {
	s.tap.observe(p)
	return s.Sink.Write(p)
}

func (s *realSpeaker) Close() error {
	err := s.Sink.Close()
	s.once.Do(s.ref.release)
	return err
}

func (s *realSpeaker) speechTap() *speechTap  { return s.tap }
func (s *realSpeaker) halfDuplexMode() string { return s.mode }

// realMic is the PortAudio Source as the agent uses it; in half-duplex mode
// mute it returns silence while the speaker is audible.
type realMic struct {
	*portaudio.Source
	mute *speechTap
	ref  *hostRef
	once sync.Once
}

func (m *realMic) Read(dst []int16) (int, error) {
	n, err := m.Source.Read(dst)
	if m.mute != nil && m.mute.speaking() {
		clear(dst[:n])
	}
	return n, err
}

func (m *realMic) Close() error {
	err := m.Source.Close()
	m.once.Do(m.ref.release)
	return err
}
