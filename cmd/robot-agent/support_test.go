package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/sim"
)

// supportSectionNode is the YAML node of a support section.
func supportSectionNode(t *testing.T, y string) yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(y), &doc); err != nil {
		t.Fatal(err)
	}
	return *doc.Content[0]
}

// readBundle unpacks a bundle into base name → content.
func readBundle(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[filepath.Base(h.Name)] = b
		}
	}
}

// TestSupportBundle runs the agent (simulated mic and speaker, embedded
// gateway echoing speech back), then asks it for a bundle the two ways an
// operator does: `robot-agent bundle` over the socket, and SIGUSR1. The
// WAVs must decode and hold audio, control.jsonl must parse and show the
// hello exchange both ways, and the secret (here smuggled into the hello as
// the firmware version, so it crosses the wire) must appear nowhere.
func TestSupportBundle(t *testing.T) {
	const secret = "tok-e2e-SECRET-91c2"
	dir := t.TempDir()
	script := &sim.SpeechScript{Utterances: []sim.Utterance{{Speech: 0, Silence: 400 * time.Millisecond}, {Speech: 600 * time.Millisecond, Silence: 2 * time.Second}}}
	e := startE2E(t, script, gateway.Config{Token: "sim-token", Speed: 8}, func(c *config.Config) {
		c.Metrics.Listen = config.MetricsOff
		c.Gateway.Token = secret
		c.Device.FirmwareVersion = "fw-" + secret
		c.Extra = map[string]yaml.Node{supportSection: supportSectionNode(t, "dir: "+dir+"\naudio_seconds: 5\nkeep_bundles: 3\n")}
	})
	waitUntil(t, 15*time.Second, "TTS audio to arrive", func() bool { return e.reg.Value("robot_agent_uplink_tts_bytes_total") > 0 })

	out := filepath.Join(t.TempDir(), "copy.tar.gz")
	code, stdout, errs := runCLI("bundle", "--dir", dir, "-o", out)
	if code != 0 || strings.TrimSpace(stdout) != out {
		t.Fatalf("bundle: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	files := readBundle(t, out)
	for _, n := range []string{"mic.wav", "tts.wav", "control.jsonl", "config.yaml", "version.txt", "metrics.txt"} {
		if len(files[n]) == 0 {
			t.Errorf("bundle lacks %s", n)
		}
	}
	for n, b := range files {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s contains the secret", n)
		}
	}
	for n, rate := range map[string]int{"mic.wav": 16000, "tts.wav": 24000} {
		a, err := wav.Decode(bytes.NewReader(files[n]))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if a.SampleRate != rate || a.Channels != 1 || a.Frames() < rate/10 {
			t.Errorf("%s: %d Hz, %d ch, %d frames", n, a.SampleRate, a.Channels, a.Frames())
		}
	}
	var helloUp, helloDown, redacted bool
	sc := bufio.NewScanner(bytes.NewReader(files["control.jsonl"]))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("control.jsonl: %v: %s", err, sc.Bytes())
		}
		var m struct {
			Type string `json:"type"`
		}
		json.Unmarshal(l.Msg, &m)
		helloUp = helloUp || (l.Dir == "up" && m.Type == "hello")
		helloDown = helloDown || (l.Dir == "down" && m.Type == "hello")
		redacted = redacted || bytes.Contains(l.Msg, []byte("fw-[REDACTED]"))
	}
	if !helloUp || !helloDown || !redacted {
		t.Errorf("control.jsonl: hello up %v, hello down %v, redacted firmware version %v:\n%s", helloUp, helloDown, redacted, files["control.jsonl"])
	}
	if !bytes.Contains(files["version.txt"], []byte("robot-agent ")) || !bytes.Contains(files["config.yaml"], []byte("e2e-robot")) {
		t.Errorf("version.txt %q / config.yaml %q", files["version.txt"], files["config.yaml"])
	}

	// SIGUSR1 writes one into <dir>/bundles too.
	before, _ := filepath.Glob(filepath.Join(dir, "bundles", "*.tar.gz"))
	time.Sleep(5 * time.Millisecond) // bundle names have millisecond resolution
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "a bundle from SIGUSR1", func() bool {
		now, _ := filepath.Glob(filepath.Join(dir, "bundles", "*.tar.gz"))
		return len(now) > len(before)
	})
	e.stop(t)
	if _, err := os.Stat(filepath.Join(dir, "agent.sock")); !os.IsNotExist(err) {
		t.Errorf("agent.sock left behind after shutdown: %v", err)
	}
	if code, _, errs := runCLI("bundle", "--dir", dir); code != 4 || !strings.Contains(errs, "no running agent answered on "+filepath.Join(dir, "agent.sock")) {
		t.Errorf("bundle with the agent stopped: exit %d, %q", code, errs)
	}
}

func TestSupportConfigErrors(t *testing.T) {
	for _, tc := range []struct{ y, want string }{
		{"audio_seconds: 0", "support.audio_seconds: 0: want 1..600"},
		{"keep_bundle: 3", "support.keep_bundle: unknown key (did you mean keep_bundles?; line 1)"},
		{"control_messages: 0\nkeep_bundles: 0", "support.control_messages: 0: want 1..100000\nsupport.keep_bundles: 0: want 1..1000"},
	} {
		c := config.Default()
		c.Extra = map[string]yaml.Node{supportSection: supportSectionNode(t, tc.y)}
		if _, err := loadSupportConfig(c, os.Getenv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.y, err, tc.want)
		}
	}
}

// TestPackagedConfigRuns: build/config.yaml loads with every section the
// agent knows, and its support section is valid and points at the state
// directory.
func TestPackagedConfigRuns(t *testing.T) {
	c, err := config.Load("../../build/config.yaml", extraSections...)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateConfig(c, false, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	sc, err := loadSupportConfig(c, func(string) string { return "" })
	if err != nil || sc.Dir != "/var/lib/robot-agent" || sc.AudioSeconds != 30 || sc.ControlMessages != 500 {
		t.Fatalf("packaged support section: %+v, %v", sc, err)
	}
	d, err := loadDuplex(c, func(string) string { return "" })
	if err != nil || d.RoomFile != "/var/lib/robot-agent/room.json" || !d.ReverbGuard {
		t.Fatalf("packaged duplex section: room_file %q, reverb_guard %v, %v; want the room kept in the state directory", d.RoomFile, d.ReverbGuard, err)
	}
}
