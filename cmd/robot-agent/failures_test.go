package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/metrics"
)

// The failure tests run the command as its own process: this test binary
// re-executed with ROBOT_AGENT_TEST_MAIN=1 runs main's entry point, so the
// exit status and everything on stderr (a panic's goroutine dump included)
// are what an operator or systemd would see.
func TestMain(m *testing.M) {
	if os.Getenv("ROBOT_AGENT_TEST_MAIN") == "1" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runProcess runs robot-agent args in a child process and returns its exit
// status, stdout and stderr.
func runProcess(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "ROBOT_AGENT_TEST_MAIN=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case errors.Is(err, syscall.ENOEXEC):
		// Under qemu-user without binfmt_misc (make test-arm) the test
		// binary cannot start a copy of itself; make test runs this
		// natively.
		t.Skipf("cannot run the test binary as a child process here: %v", err)
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

// TestStartupFailures: each start-up failure prints exactly one line
// "robot-agent: cause (fix)" and exits with its class's code; never a
// panic.
func TestStartupFailures(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyAddr := busy.Addr().String()
	spk := filepath.Join(dir, "p.wav")
	cases := []struct {
		name string
		args []string
		env  []string
		code int
		line string // the whole line on stderr
		skip bool
	}{
		{name: "ws to a LAN gateway", code: exitConfig,
			args: []string{"run", "--gateway-url", "ws://192.168.1.5:8765/v1/robot"},
			line: `robot-agent: gateway.url: "ws://192.168.1.5:8765/v1/robot": plain ws:// to a non-loopback host sends audio and the token in clear text (use wss://, or set gateway.allow_insecure_ws: true for a LAN development gateway)`},
		{name: "half_duplex maybe", code: exitConfig,
			args: []string{"run", "--sim", "--config", file("hd.yaml", "audio_devices:\n  half_duplex: maybe\n")},
			line: `robot-agent: audio_devices.half_duplex: "maybe": want gate, mute or off`},
		{name: "busy metrics port", code: exitNetwork,
			args: []string{"run", "--sim", "--duration", "5s", "--log-level", "error", "--speaker-wav", spk, "--metrics-listen", busyAddr},
			line: `robot-agent: metrics.listen: "` + busyAddr + `": cannot listen: bind: address already in use (fix: choose a free port with metrics.listen / --metrics-listen, or off, or stop what listens there (ss -ltnp))`},
		{name: "missing mic wav", code: exitConfig,
			args: []string{"run", "--sim", "--mic-wav", filepath.Join(dir, "nope.wav")},
			line: `robot-agent: sim.mic_wav: "` + filepath.Join(dir, "nope.wav") + `": cannot open: no such file or directory (give a readable WAV file (--mic-wav), or leave it empty for the generated speech script)`},
		{name: "mic wav not a wav", code: exitConfig,
			args: []string{"run", "--sim", "--mic-wav", file("text.wav", "hello, not audio")},
			line: `robot-agent: sim.mic_wav: "` + filepath.Join(dir, "text.wav") + `": wav: `},
		{name: "sim room noise recording missing", code: exitConfig,
			args: []string{"run", "--sim", "--config", file("nw.yaml", "duplex:\n  sim_room:\n    noise_wav: "+filepath.Join(dir, "fan.wav")+"\n")},
			line: `robot-agent: duplex.sim_room.noise_wav: "` + filepath.Join(dir, "fan.wav") + `": wav: open ` + filepath.Join(dir, "fan.wav") + `: no such file or directory (give a readable WAV file, or leave it empty for the noise kind (noise))`},
		{name: "sim room impulse response not a wav", code: exitConfig,
			args: []string{"run", "--sim", "--config", file("iw.yaml", "duplex:\n  sim_room:\n    ir_wav: "+file("ir.wav", "hello, not audio")+"\n")},
			line: `robot-agent: duplex.sim_room.ir_wav: "` + filepath.Join(dir, "ir.wav") + `": wav: `},
		{name: "H264 camera without an encoder", code: exitConfig, skip: h264.Backend != "",
			args: []string{"run", "--sim", "--config", file("cam.yaml", "camera:\n  enabled: true\n  device: sim\n")},
			line: `robot-agent: camera.h264.enabled: true: this binary has no H264 encoder (built without cgo or libx264) (install the full build (make build with libx264-dev), use camera.format: h264 for a camera that encodes H264 itself, or set camera.h264.enabled: false and stream images)`},
		{name: "frame_ms twenty", code: exitConfig,
			args: []string{"run", "--sim", "--config", file("ft.yaml", "audio:\n  frame_ms: twenty\n")},
			line: `robot-agent: ` + filepath.Join(dir, "ft.yaml") + `: audio.frame_ms: "twenty": want a whole number (line 2)`},
		{name: "token_file typo", code: exitConfig,
			args: []string{"run", "--sim", "--config", file("tf.yaml", "gateway:\n  tokenfile: /etc/robot-agent/token\n")},
			line: `robot-agent: ` + filepath.Join(dir, "tf.yaml") + `: gateway.tokenfile: unknown key (did you mean token_file?; line 2)`},
		{name: "token file missing", code: exitConfig,
			args: []string{"run", "--gateway-url", "wss://gw.example.com/v1/robot"}, env: []string{"ROBOT_AGENT_TOKEN_FILE=" + filepath.Join(dir, "no-token")},
			line: `robot-agent: gateway.token_file: "` + filepath.Join(dir, "no-token") + `": cannot read: no such file or directory (check the path and that the service user may read it)`},
		{name: "no gateway", code: exitConfig, args: []string{"run"},
			line: `robot-agent: gateway.url: not set (set gateway.url (or ROBOT_AGENT_GATEWAY_URL / --gateway-url) to the wss:// gateway, or use --sim for the embedded gateway)`},
		{name: "CA file missing", code: exitConfig,
			args: []string{"run", "--config", file("ca.yaml", "gateway:\n  url: wss://gw.example.com/v1/robot\n  tls:\n    ca_file: /nonexistent/ca.pem\n")},
			line: `robot-agent: gateway.tls.ca_file: "/nonexistent/ca.pem": cannot read: no such file or directory (check the path and that the service user may read it)`},
		{name: "CA file not PEM", code: exitConfig,
			args: []string{"run", "--config", file("ca2.yaml", "gateway:\n  url: wss://gw.example.com/v1/robot\n  tls:\n    ca_file: "+file("ca.pem", "junk")+"\n")},
			line: `robot-agent: gateway.tls.ca_file: "` + filepath.Join(dir, "ca.pem") + `": no PEM certificate in the file (give the CA certificate in PEM (BEGIN CERTIFICATE))`},
		{name: "gateway port busy", code: exitNetwork, args: []string{"gateway", "--listen", busyAddr},
			line: `robot-agent: gateway: cannot listen on ` + busyAddr + `: bind: address already in use (fix: choose a free address with --listen (port 0 picks one), or stop what listens there (ss -ltnp))`},
		{name: "gateway TLS key missing", code: exitConfig, args: []string{"gateway", "--listen", "127.0.0.1:0", "--tls-cert", "cert.pem"},
			line: `robot-agent: --tls-cert: "cert.pem": --tls-cert and --tls-key go together (give both for wss://, or neither)`},
		{name: "gateway token file missing", code: exitConfig, args: []string{"gateway", "--listen", "127.0.0.1:0", "--token-file", filepath.Join(dir, "gw-token")},
			line: `robot-agent: --token-file: "` + filepath.Join(dir, "gw-token") + `": cannot read: no such file or directory (give a readable file holding the token)`},
		{name: "gateway client CA without a certificate", code: exitConfig, args: []string{"gateway", "--listen", "127.0.0.1:0", "--client-ca", "ca.pem"},
			line: `robot-agent: --client-ca: "ca.pem": mutual TLS needs a server certificate (add --tls-cert and --tls-key)`},
		{name: "real audio in a build without PortAudio", code: exitDevice, skip: tagPortAudio != "",
			args: []string{"run", "--gateway-url", "wss://127.0.0.1:1/v1/robot"},
			line: "robot-agent: portaudio: real audio devices: device: support not built into this binary (rebuild with cgo and -tags portaudio after installing portaudio19-dev, e.g. `make build`; or run with --sim)"},
		{name: "camera missing", code: exitDevice,
			args: []string{"run", "--sim", "--log-level", "error", "--speaker-wav", spk, "--config", file("cam2.yaml", "camera:\n  enabled: true\n  device: /dev/video99\n  h264:\n    enabled: false\n")},
			line: "robot-agent: camera: "},
		{name: "config file missing", code: exitConfig, args: []string{"run", "--sim", "--config", filepath.Join(dir, "none.yaml")},
			line: `robot-agent: --config: "` + filepath.Join(dir, "none.yaml") + `": cannot open: no such file or directory (give the path of a readable YAML file (packaged installs: /etc/robot-agent/config.yaml))`},
		{name: "unknown flag", code: exitConfig, args: []string{"run", "--simm"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("not applicable to this build")
			}
			code, _, stderr := runProcess(t, tc.env, tc.args...)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("panicked:\n%s", stderr)
			}
			if tc.line == "" {
				return
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.line) {
				t.Errorf("stderr:\n%s\nwant one line starting\n%s", stderr, tc.line)
			}
		})
	}
}

// TestConfigProblemsAllAtOnce: a file with several problems in several
// sections reports each on its own line, in one run.
func TestConfigProblemsAllAtOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("audio:\n  frame_ms: 25\naudio_devices:\n  half_duplex: maybe\n  period_ms: 0\ncamera:\n  enabled: true\n  fps: 0\nplayback:\n  fade_ms: 99\n"+
		"skills:\n  allow: [gpio.sett]\nidentity:\n  min_confidence: 2\nstate:\n  gpio:\n    inputs: 3\n"), 0o644)
	code, _, stderr := runCLI("run", "--sim", "--config", p)
	if code != exitConfig {
		t.Fatalf("exit %d, want %d", code, exitConfig)
	}
	for _, want := range []string{
		"robot-agent: audio.frame_ms: 25: want 10, 20, 40 or 60\n",
		"robot-agent: playback.fade_ms: 99: want 0..50\n",
		`robot-agent: audio_devices.half_duplex: "maybe": want gate, mute or off` + "\n",
		"robot-agent: audio_devices.period_ms: 0: want 1..100\n",
		"robot-agent: camera.fps: 0: want 1..120\n",
		`robot-agent: skills.allow[0]: "gpio.sett": want one of gpio.set, gpio.blink, audio.volume` + "\n",
		"robot-agent: identity.min_confidence: 2: want 0..1\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestDoctorSharesValidation: doctor fails the config check with the same
// problems run reports.
func TestDoctorSharesValidation(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "c.yaml")
	os.WriteFile(p, []byte("gateway:\n  url: ws://192.168.1.5:8765/v1/robot\naudio_devices:\n  half_duplex: maybe\n"), 0o644)
	_, out, _ := runCLI("doctor", "--root", root, "--user", "", "--config", p)
	for _, want := range []string{"FAIL  config", `gateway.url: "ws://192.168.1.5:8765/v1/robot": plain ws:// to a non-loopback host`, `audio_devices.half_duplex: "maybe": want gate, mute or off`} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	_, runErr, _ := func() (int, string, string) { c, o, e := runCLI("run", "--config", p); return c, e, o }()
	for _, want := range []string{`gateway.url: "ws://192.168.1.5:8765/v1/robot"`, `audio_devices.half_duplex: "maybe"`} {
		if !strings.Contains(runErr, want) {
			t.Errorf("run stderr lacks %q:\n%s", want, runErr)
		}
	}
}

// dyingMic delivers silence in real time for n reads, then fails as an
// unplugged USB microphone does.
type dyingMic struct {
	n int
}

func (m *dyingMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m *dyingMic) Close() error           { return nil }
func (m *dyingMic) Read(dst []int16) (int, error) {
	if m.n == 0 {
		return 0, errors.New("mic: device unplugged")
	}
	m.n--
	time.Sleep(time.Duration(len(dst)) * time.Second / time.Duration(hw.MicFormat.SampleRate))
	clear(dst)
	return len(dst), nil
}

// TestRuntimeDeviceFailure: a microphone that fails while running stops
// the agent with the device class exit code and one line with the fix.
func TestRuntimeDeviceFailure(t *testing.T) {
	clk := clock.NewReal()
	spk, err := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Device.ID = "dying-mic"
	a, err := newAgent(cfg, agentOptions{sim: true, mic: &dyingMic{n: 20}, speaker: spk, gwConfig: &gateway.Config{}}, clk, metrics.NewRegistry(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runErr := a.run(ctx)
	if ctx.Err() != nil {
		t.Fatal("the agent kept running with a dead microphone")
	}
	var stderr bytes.Buffer
	code := reportFailure(&stderr, runErr)
	want := "robot-agent: capture: reading mic: mic: device unplugged (fix: check the microphone ('robot-agent devices', 'robot-agent doctor'); the service restarts the agent)\n"
	if code != exitDevice || stderr.String() != want {
		t.Fatalf("exit %d, stderr %q; want %d, %q", code, stderr.String(), exitDevice, want)
	}
}

// TestPackagedConfigPassesRunValidation: the config the .deb installs
// passes the whole validation run and doctor apply (not only the core
// keys).
func TestPackagedConfigPassesRunValidation(t *testing.T) {
	cfg, err := config.Load("../../build/config.yaml", extraSections...)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateConfig(cfg, false, func(string) string { return "" }); err != nil {
		t.Fatalf("build/config.yaml: %v", err)
	}
}
