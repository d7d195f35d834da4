package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

func tokenFile(t *testing.T, tok string) string {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func testGateway(t *testing.T, hooks gateway.Hooks) string {
	gw, err := gateway.New(gateway.Config{Token: "tok", Keepalive: protocol.Keepalive{IntervalMS: 500, TimeoutMS: 1500}}, clock.NewReal(), metrics.NewRegistry(), quietLog(), hooks)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + gateway.Path
}

// TestConformanceStartupFailures: each start-up failure is one line on
// stderr and exit status 2, with no report.
func TestConformanceStartupFailures(t *testing.T) {
	tok := tokenFile(t, "tok")
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no gateway", []string{"--token-file", tok}, "--gateway is required"},
		{"no token file flag", []string{"--gateway", "ws://127.0.0.1:1/v1/robot"}, "--token-file is required"},
		{"missing token file", []string{"--gateway", "ws://127.0.0.1:1/v1/robot", "--token-file", missing}, "token file: open " + missing + ": no such file or directory"},
		{"unreachable gateway", []string{"--gateway", "ws://127.0.0.1:1/v1/robot", "--token-file", tok}, "gateway unreachable: ws://127.0.0.1:1/v1/robot"},
		{"not a ws url", []string{"--gateway", "https://gw.example.com/v1/robot", "--token-file", tok}, "is not a ws:// or wss:// URL"},
		{"token refused", []string{"--gateway", testGateway(t, gateway.Hooks{}), "--token-file", tokenFile(t, "wrong")}, "upgrade refused: HTTP 403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"conformance"}, tc.args...)...)
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and no report", code, out)
			}
			if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(errs, "robot-agent conformance: ") || !strings.Contains(errs, tc.want) {
				t.Fatalf("stderr %q: want one line naming %q", errs, tc.want)
			}
		})
	}
}

// TestConformanceCommand: against the embedded gateway the selected rows
// pass (exit 0); against one that never acks they fail (exit 1) with
// evidence.
func TestConformanceCommand(t *testing.T) {
	tok := tokenFile(t, "tok")
	code, out, errs := runCLI("conformance", "--gateway", testGateway(t, gateway.Hooks{}), "--token-file", tok, "--only", "5.3,7.4,9.1,4.3", "--wait", "1s")
	if code != 0 || !strings.Contains(out, "§5.3") || !strings.Contains(out, " 0 failed") || strings.Contains(out, "FAIL") {
		t.Fatalf("embedded gateway: exit %d\n%s%s", code, out, errs)
	}
	neverAcks := testGateway(t, gateway.Hooks{BeforeAck: func(*gateway.Session, protocol.Message) bool { return false }})
	code, out, _ = runCLI("conformance", "--gateway", neverAcks, "--token-file", tok, "--only", "5.3/ack-state", "--wait", "300ms")
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "no ack or error(ref)") {
		t.Fatalf("never-acking gateway: exit %d\n%s", code, out)
	}
}
