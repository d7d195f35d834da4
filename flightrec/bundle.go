package flightrec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/wav"
)

// ErrBundle wraps every failure to write a bundle.
var ErrBundle = errors.New("flightrec: bundle")

// Config sizes the recorder.
type Config struct {
	AudioSeconds    float64 // of mic and of TTS audio; default 30
	ControlMessages int     // default 500
	MaxMessageBytes int     // longer messages are cut; default 4096
	MicRate         int     // default 16000
	TTSRate         int     // default 24000
}

func (c *Config) defaults() {
	if c.AudioSeconds <= 0 {
		c.AudioSeconds = 30
	}
	if c.ControlMessages <= 0 {
		c.ControlMessages = 500
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 4096
	}
	if c.MicRate <= 0 {
		c.MicRate = 16000
	}
	if c.TTSRate <= 0 {
		c.TTSRate = 24000
	}
}

// Recorder is the mic ring, the TTS ring and the control ring. About
// 2.5 MB with the defaults, all allocated by New.
type Recorder struct {
	cfg     Config
	clk     clock.Clock
	Mic     *AudioRing
	TTS     *AudioRing
	Control *ControlRing
}

// New allocates a recorder.
func New(cfg Config, clk clock.Clock) *Recorder {
	cfg.defaults()
	return &Recorder{
		cfg:     cfg,
		clk:     clk,
		Mic:     NewAudioRing(cfg.MicRate, cfg.AudioSeconds, clk),
		TTS:     NewAudioRing(cfg.TTSRate, cfg.AudioSeconds, clk),
		Control: NewControlRing(cfg.ControlMessages, cfg.MaxMessageBytes, clk),
	}
}

// TapControl records a control message (uplink.ControlTap).
func (r *Recorder) TapControl(up bool, msg []byte) { r.Control.Record(up, msg) }

// Meta is what a bundle carries besides the recordings.
type Meta struct {
	// Version is the first lines of version.txt (robot-agent version, build).
	Version string
	// Config is config.yaml: the effective configuration, without secrets.
	Config []byte
	// Secrets (the gateway token) are replaced by [REDACTED] wherever they
	// appear in the bundle's text files, whatever the source.
	Secrets []string
	// Extra files (name → content), e.g. metrics.txt.
	Extra map[string][]byte
}

// Redacted replaces secrets.
const Redacted = "[REDACTED]"

// WriteBundle writes a gzipped tar of one directory, prefix/, holding
// mic.wav, tts.wav, control.jsonl, config.yaml, version.txt and the extra
// files. It allocates; run it off the fast lane.
func (r *Recorder) WriteBundle(w io.Writer, prefix string, m Meta) error {
	at := r.clk.Now()
	files := map[string][]byte{}
	var err error
	if files["mic.wav"], err = wavBytes(r.Mic.Snapshot(), r.Mic.Rate()); err != nil {
		return err
	}
	if files["tts.wav"], err = wavBytes(r.TTS.Snapshot(), r.TTS.Rate()); err != nil {
		return err
	}
	files["control.jsonl"] = controlJSONL(r.Control.Snapshot())
	files["config.yaml"] = m.Config
	files["version.txt"] = []byte(r.describe(m.Version, at))
	for k, v := range m.Extra {
		files[k] = v
	}
	for k, v := range files {
		if !strings.HasSuffix(k, ".wav") {
			files[k] = redact(v, m.Secrets)
		}
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755, ModTime: at}); err != nil {
		return fmt.Errorf("%w: %v", ErrBundle, err)
	}
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + "/" + n, Mode: 0o644, Size: int64(len(files[n])), ModTime: at}); err != nil {
			return fmt.Errorf("%w: %v", ErrBundle, err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			return fmt.Errorf("%w: %v", ErrBundle, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrBundle, err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrBundle, err)
	}
	return nil
}

// describe is version.txt: the version lines, then what the recordings
// cover, so the WAVs can be lined up with control.jsonl's times.
func (r *Recorder) describe(version string, at time.Time) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(version, "\n") + "\n")
	fmt.Fprintf(&b, "bundle written: %s\n", at.UTC().Format(time.RFC3339Nano))
	for _, a := range []struct {
		name string
		r    *AudioRing
	}{{"mic.wav", r.Mic}, {"tts.wav", r.TTS}} {
		kept := min(a.r.Written(), a.r.cap)
		last := "never"
		if t := a.r.LastWrite(); !t.IsZero() {
			last = t.UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&b, "%s: last %.1f s of %.1f s recorded at %d Hz, last sample written %s, %d samples lost to dumps\n",
			a.name, float64(kept)/float64(a.r.rate), float64(a.r.Written())/float64(a.r.rate), a.r.rate, last, a.r.Lost())
	}
	fmt.Fprintf(&b, "control.jsonl: last %d of %d messages (limit %d, each cut at %d bytes), %d lost to dumps\n",
		min(r.Control.Recorded(), uint64(r.cfg.ControlMessages)), r.Control.Recorded(), r.cfg.ControlMessages, r.cfg.MaxMessageBytes, r.Control.Lost())
	b.WriteString("tts.wav holds the TTS audio as received, back to back (pauses between responses are not kept); mic.wav is continuous.\n")
	return b.String()
}

// controlLine is one line of control.jsonl.
type controlLine struct {
	Seq       uint64          `json:"seq"`
	Time      string          `json:"time"`
	Dir       string          `json:"dir"` // up: robot → gateway; down: gateway → robot
	Bytes     int             `json:"bytes"`
	Truncated bool            `json:"truncated,omitempty"`
	Msg       json.RawMessage `json:"msg,omitempty"`  // the message, when complete JSON
	Text      string          `json:"text,omitempty"` // otherwise, as text
}

func controlJSONL(recs []ControlRecord) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, c := range recs {
		l := controlLine{Seq: c.Seq, Time: c.Time.UTC().Format(time.RFC3339Nano), Dir: "down", Bytes: c.Len, Truncated: c.Truncated()}
		if c.Up {
			l.Dir = "up"
		}
		if !l.Truncated && json.Valid(c.Data) {
			var compact bytes.Buffer
			if json.Compact(&compact, c.Data) == nil {
				l.Msg = compact.Bytes()
			}
		}
		if l.Msg == nil {
			l.Text = strings.ToValidUTF8(string(c.Data), "\uFFFD")
		}
		_ = enc.Encode(l) // cannot fail: strings and valid raw JSON
	}
	return b.Bytes()
}

func redact(b []byte, secrets []string) []byte {
	for _, s := range secrets {
		if s != "" {
			b = bytes.ReplaceAll(b, []byte(s), []byte(Redacted))
		}
	}
	return b
}

// memFile is an in-memory io.WriteSeeker for the WAV writer.
type memFile struct {
	b   []byte
	off int
}

func (m *memFile) Write(p []byte) (int, error) {
	if need := m.off + len(p); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
	copy(m.b[m.off:], p)
	m.off += len(p)
	return len(p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		m.off = int(off)
	case io.SeekCurrent:
		m.off += int(off)
	case io.SeekEnd:
		m.off = len(m.b) + int(off)
	}
	return int64(m.off), nil
}

func wavBytes(s []int16, rate int) ([]byte, error) {
	f := &memFile{}
	w, err := wav.NewWriter(f, rate, 1)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBundle, err)
	}
	if err := w.Write(s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBundle, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBundle, err)
	}
	return f.b, nil
}

// DumpToDir writes a bundle into dir as robot-agent-bundle-<UTC time>.tar.gz
// (created 0600 through a temporary name, so a reader never sees half a
// bundle), keeps only the newest keep bundles there, and returns the path.
func (r *Recorder) DumpToDir(dir string, keep int, m Meta) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBundle, err)
	}
	name := "robot-agent-bundle-" + r.clk.Now().UTC().Format("20060102T150405.000Z")
	path := filepath.Join(dir, name+".tar.gz")
	f, err := os.CreateTemp(dir, ".bundle-*")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBundle, err)
	}
	defer os.Remove(f.Name())
	if err := r.WriteBundle(f, name, m); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("%w: %v", ErrBundle, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBundle, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBundle, err)
	}
	if keep > 0 {
		old, _ := filepath.Glob(filepath.Join(dir, "robot-agent-bundle-*.tar.gz"))
		sort.Strings(old) // names sort by time
		for len(old) > keep {
			os.Remove(old[0])
			old = old[1:]
		}
	}
	return path, nil
}
