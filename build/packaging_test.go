// Package build_test checks that the packaged files agree with the agent:
// the default config loads and validates, and the credential the unit
// loads is the one the agent reads. The shell scripts beside it are checked
// by make check-unit / check-deb.
package build_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/config"
)

// packagedSections are the optional sections build/config.yaml uses
// (cmd/robot-agent decodes and checks them; TestPackagedConfigRuns there).
var packagedSections = []string{"support", "duplex"}

func TestPackagedConfigIsValid(t *testing.T) {
	c, err := config.Load("config.yaml", packagedSections...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("build/config.yaml: %v", err)
	}
	if c.Gateway.TokenFile != "" {
		t.Errorf("packaged config sets gateway.token_file %q; the unit passes the token as a credential", c.Gateway.TokenFile)
	}
	if !strings.HasPrefix(c.Gateway.URL, "wss://") {
		t.Errorf("packaged gateway.url %q is not wss://", c.Gateway.URL)
	}
	if c.Metrics.Listen != config.DefaultMetricsListen {
		t.Errorf("packaged metrics.listen %q, want the default %q shown", c.Metrics.Listen, config.DefaultMetricsListen)
	}
	// The bundle directory is the unit's StateDirectory, the one place the
	// service may write.
	if got := unitValues(t, "StateDirectory"); len(got) != 1 || !strings.Contains(string(mustRead(t, "config.yaml")), "dir: /var/lib/"+got[0]+"\n") {
		t.Errorf("packaged support.dir is not /var/lib/<StateDirectory=%v>", got)
	}
	// The spool must live in the unit's StateDirectory, the one place
	// the hardened unit (ProtectSystem=strict) can write.
	state := unitValues(t, "StateDirectory")
	if len(state) != 1 || !strings.HasPrefix(c.Spool.Path, "/var/lib/"+state[0]+"/") {
		t.Errorf("packaged spool.path %q is not under the unit's StateDirectory %v (/var/lib/...)", c.Spool.Path, state)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeployDocShowsTheShippedUnit: docs/deploy.md quotes the unit; the
// quote must be the file the package ships, byte for byte.
func TestDeployDocShowsTheShippedUnit(t *testing.T) {
	doc := string(mustRead(t, "../docs/deploy.md"))
	const open = "<!-- unit: build/systemd/robot-agent.service -->\n```ini\n"
	i := strings.Index(doc, open)
	if i < 0 {
		t.Fatalf("docs/deploy.md has no %q block", strings.TrimSpace(open))
	}
	rest := doc[i+len(open):]
	j := strings.Index(rest, "```\n")
	if j < 0 {
		t.Fatal("docs/deploy.md: unit block not closed")
	}
	if unit := string(mustRead(t, "systemd/robot-agent.service")); rest[:j] != unit {
		t.Errorf("the unit quoted in docs/deploy.md differs from build/systemd/robot-agent.service; paste the file again")
	}
}

// unitValues returns every value of key in the unit file.
func unitValues(t *testing.T, key string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("systemd", "robot-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestUnitCredentialReachesAgent loads the token the way the agent does
// under systemd: from $CREDENTIALS_DIRECTORY/<id>, with <id> taken from the
// unit's LoadCredential=.
func TestUnitCredentialReachesAgent(t *testing.T) {
	creds := unitValues(t, "LoadCredential")
	if len(creds) != 1 {
		t.Fatalf("LoadCredential lines: %q, want one", creds)
	}
	id, src, ok := strings.Cut(creds[0], ":")
	if !ok || src != "/etc/robot-agent/gateway-token" {
		t.Fatalf("LoadCredential=%s: want <id>:/etc/robot-agent/gateway-token", creds[0])
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, id), []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load("config.yaml", packagedSections...)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CREDENTIALS_DIRECTORY": dir}
	if err := c.LoadToken(func(k string) string { return env[k] }, true); err != nil {
		t.Fatalf("agent does not find the credential %q the unit loads: %v", id, err)
	}
	if c.Gateway.Token != "tok-123" {
		t.Fatalf("token %q", c.Gateway.Token)
	}
	for _, l := range unitValues(t, "ExecStart") {
		if strings.Contains(strings.ToLower(l), "token") {
			t.Errorf("ExecStart passes a token on the command line: %s", l)
		}
	}
}

func TestUnitRunsPackagedConfig(t *testing.T) {
	exec := unitValues(t, "ExecStart")
	want := "/usr/bin/robot-agent run --config /etc/robot-agent/config.yaml"
	if len(exec) != 1 || exec[0] != want {
		t.Fatalf("ExecStart %q, want %q", exec, want)
	}
	if got := unitValues(t, "Type"); len(got) != 1 || got[0] != "notify" {
		t.Fatalf("Type=%q, want notify (the agent sends READY=1 through package sdnotify)", got)
	}
}
