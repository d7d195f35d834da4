package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorTokenAsRun: doctor judges the token as run does. Without
// gateway.token_file the token is optional: doctor warns that it is not
// configured (no FAIL) and run starts without one. A configured
// token_file that is missing fails both.
func TestDoctorTokenAsRun(t *testing.T) {
	root := t.TempDir()
	t.Setenv("CREDENTIALS_DIRECTORY", t.TempDir()) // no gateway-token credential in it
	missing := filepath.Join(root, "no-token")
	for _, tt := range []struct {
		name      string
		yaml      string
		doctor    string // the gateway token line
		runFailed string // run's error, "" when run accepts the config
	}{
		{"not configured", "gateway:\n  url: wss://127.0.0.1:1/v1/robot\n",
			"WARN  gateway token   not configured (optional: the agent connects without a token", ""},
		{"configured but missing", "gateway:\n  url: wss://127.0.0.1:1/v1/robot\n  token_file: " + missing + "\n",
			"FAIL  gateway token   " + missing + " does not exist", `gateway.token_file: "` + missing + `": cannot read: no such file or directory`},
	} {
		p := filepath.Join(root, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
		if err := os.WriteFile(p, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, out, _ := runCLI("doctor", "--root", root, "--user", "", "--config", p)
		if !strings.Contains(out, tt.doctor) {
			t.Errorf("%s: doctor output lacks %q:\n%s", tt.name, tt.doctor, out)
		}
		if failed := strings.Contains(out, "FAIL  gateway token"); failed != (tt.runFailed != "") {
			t.Errorf("%s: doctor fails the token: %v, run fails it: %v", tt.name, failed, tt.runFailed != "")
		}
		if !strings.Contains(out, "ok    config") {
			t.Errorf("%s: config check not ok:\n%s", tt.name, out)
		}
		f, fs, err := parseRunFlags([]string{"--config", p}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := loadRunConfig(f, fs, os.Getenv)
		switch {
		case tt.runFailed == "" && err != nil:
			t.Errorf("%s: run refuses the config: %v", tt.name, err)
		case tt.runFailed == "" && cfg.Gateway.Token != "":
			t.Errorf("%s: run loaded a token %q", tt.name, cfg.Gateway.Token)
		case tt.runFailed != "" && (err == nil || !strings.Contains(err.Error(), tt.runFailed)):
			t.Errorf("%s: run error %v, want %q", tt.name, err, tt.runFailed)
		}
	}
}
