package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI("version")
	if code != 0 || !strings.HasPrefix(out, "robot-agent dev (") || !strings.Contains(out, "cgo=") {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestUsageAndUnknownCommand(t *testing.T) {
	if code, _, errs := runCLI(); code != 2 || !strings.Contains(errs, "robot-agent run [flags]") {
		t.Fatalf("no args: %d %q", code, errs)
	}
	if code, _, errs := runCLI("fly"); code != 2 || !strings.Contains(errs, `unknown command "fly"`) {
		t.Fatalf("unknown: %d %q", code, errs)
	}
	if code, _, errs := runCLI("run", "-h"); code != 0 || !strings.Contains(errs, "--sim") && !strings.Contains(errs, "-sim") {
		t.Fatalf("run -h: %d %q", code, errs)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "c.yaml")
	os.WriteFile(bad, []byte("audio:\n  frame_ms: 25\nplayback:\n  fade_ms: 99\n"), 0o644)
	code, _, errs := runCLI("run", "--sim", "--config", bad)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"robot-agent: audio.frame_ms: 25: want 10, 20, 40 or 60\n", "robot-agent: playback.fade_ms: 99: want 0..50\n"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q does not name %q", errs, want)
		}
	}
	typo := filepath.Join(dir, "t.yaml")
	os.WriteFile(typo, []byte("gateway:\n  urll: wss://x\n"), 0o644)
	if code, _, errs := runCLI("run", "--config", typo); code != 2 || !strings.Contains(errs, "urll") {
		t.Fatalf("typo: %d %q", code, errs)
	}
	if code, _, errs := runCLI("run"); code != 2 || !strings.Contains(errs, "gateway.url: not set") {
		t.Fatalf("no url: %d %q", code, errs)
	}
	t.Setenv("ROBOT_AGENT_TOKEN_FILE", filepath.Join(dir, "missing-token"))
	if code, _, errs := runCLI("run", "--gateway-url", "wss://gw.example.com/v1/robot"); code != 2 || !strings.Contains(errs, "gateway.token_file") {
		t.Fatalf("missing token file: %d %q", code, errs)
	}
}

func TestRunSimShortSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s session")
	}
	wav := filepath.Join(t.TempDir(), "played.wav")
	code, out, errs := runCLI("run", "--sim", "--duration", "3s", "--speaker-wav", wav, "--log-level", "warn")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"robot-agent summary", "1 session(s)", "played audio: " + wav} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if st, err := os.Stat(wav); err != nil || st.Size() < 44+2*24000 {
		t.Fatalf("played WAV %v %v: want at least 1 s of audio", st, err)
	}
}

// TestRunStopsCleanlyOnSIGTERM: a running agent told to stop drains and
// exits with status 0 within a few seconds, and prints its summary.
func TestRunStopsCleanlyOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	done := make(chan struct{})
	var code int
	var out string
	go func() {
		code, out, _ = runCLI("run", "--sim", "--speaker-wav", filepath.Join(t.TempDir(), "p.wav"), "--log-level", "error")
		close(done)
	}()
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(6 * time.Second):
		t.Fatal("agent did not exit within 6 s of SIGTERM")
	}
	if code != 0 || !strings.Contains(out, "robot-agent summary") || !strings.Contains(out, "1 session(s)") {
		t.Fatalf("exit %d, summary:\n%s", code, out)
	}
	t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// TestDoctorOnThisMachine: with no devices (an empty /dev and /sys), no
// token and no gateway, doctor names each missing piece and exits 1.
func TestDoctorOnThisMachine(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "config.yaml")
	os.WriteFile(cfg, []byte("gateway:\n  url: wss://127.0.0.1:1/v1/robot\n  token_file: "+filepath.Join(root, "no-token")+"\n"), 0o644)
	code, out, _ := runCLI("doctor", "--root", root, "--user", "", "--config", cfg)
	if code != 1 {
		t.Fatalf("doctor exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"ok    config", "FAIL  gateway token", "FAIL  sound capture", "FAIL  sound playback", "WARN  camera", "FAIL  gpio", "FAIL  i2c", "FAIL  gateway", "fix:"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunFailsOnUnusableSpool(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-dir")
	os.WriteFile(file, []byte("x"), 0o600)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("spool:\n  path: "+filepath.Join(file, "spool")+"\n"), 0o644)
	code, _, errs := runCLI("run", "--sim", "--quiet", "--config", cfg, "--duration", "5s", "--speaker-wav", filepath.Join(dir, "p.wav"), "--log-level", "error")
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "robot-agent: ") || !strings.Contains(lines[0], "spool.path") || !strings.Contains(lines[0], "StateDirectory") {
		t.Fatalf("exit %d, stderr %q; want 2 (configuration) and one line naming spool.path with the fix", code, errs)
	}
}
