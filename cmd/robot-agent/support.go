package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/flightrec"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/uplink"
)

// The flight recorder and support bundles (docs/deploy.md, "Support
// bundles"). The recorder keeps the last support.audio_seconds of mic and
// TTS audio and the last support.control_messages control messages; a
// bundle is written into <support.dir>/bundles on SIGUSR1 or when
// `robot-agent bundle` asks over the agent's socket <support.dir>/agent.sock.

const supportSection = "support"

// supportConfig is the support section.
type supportConfig struct {
	// Dir holds agent.sock and bundles/. Default: $STATE_DIRECTORY (set by
	// systemd's StateDirectory=), else $TMPDIR/robot-agent-<uid>. The
	// packaged config sets /var/lib/robot-agent.
	Dir             string  `yaml:"dir"`
	AudioSeconds    float64 `yaml:"audio_seconds"`
	ControlMessages int     `yaml:"control_messages"`
	KeepBundles     int     `yaml:"keep_bundles"`
}

// loadSupportConfig decodes the support section over the defaults and
// validates it; every problem is a *field.Error under support.
func loadSupportConfig(cfg config.Config, getenv func(string) string) (supportConfig, error) {
	c := supportConfig{AudioSeconds: 30, ControlMessages: 500, KeepBundles: 5}
	if _, err := config.DecodeSection(cfg.Extra, supportSection, &c); err != nil {
		return c, err
	}
	var errs field.List
	const p = supportSection + "."
	if c.AudioSeconds < 1 || c.AudioSeconds > 600 {
		errs.Add(p+"audio_seconds", c.AudioSeconds, "want 1..600", "")
	}
	if c.ControlMessages < 1 || c.ControlMessages > 100000 {
		errs.Add(p+"control_messages", c.ControlMessages, "want 1..100000", "")
	}
	if c.KeepBundles < 1 || c.KeepBundles > 1000 {
		errs.Add(p+"keep_bundles", c.KeepBundles, "want 1..1000", "")
	}
	if c.Dir == "" {
		c.Dir = defaultSupportDir(getenv)
	}
	return c, errs.Err()
}

func defaultSupportDir(getenv func(string) string) string {
	if d := getenv("STATE_DIRECTORY"); d != "" {
		return strings.Split(d, ":")[0]
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("robot-agent-%d", os.Getuid()))
}

// supportParts is the recorder and its triggers.
type supportParts struct {
	cfg     supportConfig
	rec     *flightrec.Recorder
	secrets []string
	mu      sync.Mutex // one bundle at a time
	stop    chan struct{}
	done    sync.WaitGroup
}

// setupRecorder creates the flight recorder and puts its mic tap in front
// of a.mic. Call once the mic is open, before the capture pump is built.
func (a *agent) setupRecorder() error {
	sc, err := loadSupportConfig(a.cfg, os.Getenv)
	if err != nil {
		return err
	}
	a.ops.support = &supportParts{cfg: sc, secrets: []string{a.cfg.Gateway.Token},
		rec: flightrec.New(flightrec.Config{AudioSeconds: sc.AudioSeconds, ControlMessages: sc.ControlMessages, TTSRate: hw.TTSFormat.SampleRate}, a.clk)}
	a.mic = recordingSource{a.mic, a.ops.support.rec.Mic}
	return nil
}

// recordTTS puts the recorder's TTS tap in front of tts (nil recorder: tts).
func (a *agent) recordTTS(tts uplink.TTSSink) uplink.TTSSink {
	if a.ops.support == nil {
		return tts
	}
	return &recordingTTS{TTSSink: tts, ring: a.ops.support.rec.TTS, buf: make([]int16, protocol.MaxTTSFrame/2)}
}

// controlTap is the recorder as the uplink's control tap (nil: none).
func (a *agent) controlTap(token string) uplink.ControlTap {
	if a.ops.support == nil {
		return nil
	}
	a.ops.support.secrets = append(a.ops.support.secrets, token)
	return a.ops.support.rec
}

// recordingSource copies what the mic returns into the recorder (capture
// goroutine; no allocation).
type recordingSource struct {
	hw.AudioSource
	ring *flightrec.AudioRing
}

func (r recordingSource) Read(dst []int16) (int, error) {
	n, err := r.AudioSource.Read(dst)
	if n > 0 {
		r.ring.Write(dst[:n])
	}
	return n, err
}

// Unwrap returns the wrapped source.
func (r recordingSource) Unwrap() hw.AudioSource { return r.AudioSource }

// recordingTTS copies received TTS audio into the recorder (read pump; no
// allocation: buf is sized for the largest TTS frame).
type recordingTTS struct {
	uplink.TTSSink
	ring *flightrec.AudioRing
	buf  []int16
}

func (r *recordingTTS) PushPCM(id uint32, pcmLE []byte) error {
	n := pcm.BytesToInt16(r.buf, pcmLE[:min(len(pcmLE), 2*len(r.buf))])
	r.ring.Write(r.buf[:n])
	return r.TTSSink.PushPCM(id, pcmLE)
}

// startSupport starts the bundle triggers: SIGUSR1 and the socket
// <dir>/agent.sock. Failing to create the socket is a warning (SIGUSR1
// still works): support tooling must not keep a robot from running.
func (a *agent) startSupport() {
	s := a.ops.support
	if s == nil {
		return
	}
	s.stop = make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			select {
			case <-s.stop:
				return
			case <-sig:
				if p, err := a.writeBundle(); err != nil {
					a.log.Error("support bundle failed", "err", err)
				} else {
					a.log.Info("support bundle written (SIGUSR1)", "path", p)
				}
			}
		}
	}()
	a.closers = append(a.closers, func() error {
		signal.Stop(sig)
		close(s.stop)
		s.done.Wait()
		return nil
	})
	if ln, err := listenSupport(s.cfg.Dir, a.log); err != nil {
		a.log.Warn("support socket unavailable; `robot-agent bundle` cannot reach this agent (SIGUSR1 still writes bundles)", "err", err)
	} else {
		s.done.Add(1)
		go func() { defer s.done.Done(); a.serveSupport(ln) }()
		a.closers = append(a.closers, func() error { ln.Close(); os.Remove(ln.Addr().String()); return nil })
	}
}

// listenSupport binds <dir>/agent.sock, replacing a stale socket file but
// never one another running agent still answers on.
func listenSupport(dir string, log *slog.Logger) (net.Listener, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "agent.sock")
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: another robot-agent is listening there (set support.dir)", path)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	os.Chmod(path, 0o600)
	log.Info("support socket listening", "path", path)
	return ln, nil
}

// serveSupport answers "bundle" requests: one line in, "ok PATH" or
// "error MESSAGE" out.
func (a *agent) serveSupport(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return
			}
			switch strings.TrimSpace(line) {
			case "bundle":
				p, err := a.writeBundle()
				if err != nil {
					fmt.Fprintf(c, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
					return
				}
				a.log.Info("support bundle written (robot-agent bundle)", "path", p)
				fmt.Fprintf(c, "ok %s\n", p)
			default:
				fmt.Fprintf(c, "error unknown request %q (want bundle)\n", strings.TrimSpace(line))
			}
		}()
	}
}

// writeBundle dumps the recorder with the effective config (no secrets),
// the version and the current metrics into <dir>/bundles.
func (a *agent) writeBundle() (string, error) {
	s := a.ops.support
	s.mu.Lock()
	defer s.mu.Unlock()
	cfgYAML, err := yaml.Marshal(a.cfg) // Gateway.Token is yaml:"-"
	if err != nil {
		cfgYAML = []byte("# config could not be encoded: " + err.Error() + "\n")
	}
	var m bytes.Buffer
	a.reg.WritePrometheus(&m)
	up := "unknown"
	if !a.started.IsZero() {
		up = time.Since(a.started).Round(time.Second).String()
	}
	return s.rec.DumpToDir(filepath.Join(s.cfg.Dir, "bundles"), s.cfg.KeepBundles, flightrec.Meta{
		Version: versionString() + "\ndevice: " + a.cfg.Device.ID + "\nuptime: " + up,
		Config:  append([]byte("# effective configuration (defaults, file, environment, flags); secrets are not included\n"), cfgYAML...),
		Secrets: s.secrets,
		Extra:   map[string][]byte{"metrics.txt": m.Bytes()},
	})
}
