package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJitterReplayFailures: every start-up failure prints one line naming
// the cause and exits non-zero.
func TestJitterReplayFailures(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.trace")
	if err := os.WriteFile(bad, []byte("# comment\n0,480\n20,480\n40;480\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	neg := filepath.Join(dir, "neg.trace")
	if err := os.WriteFile(neg, []byte("0,480\n20,-3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.trace")
	if err := os.WriteFile(empty, []byte("# nothing\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no trace", nil, 2, "no trace file given"},
		{"missing file", []string{filepath.Join(dir, "nope.trace")}, 2, "nope.trace: no such file"},
		{"bad separator", []string{bad}, 2, "bad.trace:4: want \"arrival_ms,samples\""},
		{"bad samples", []string{neg}, 2, "neg.trace:2: samples \"-3\""},
		{"no frames", []string{empty}, 2, "empty.trace: no frames"},
		{"bad policy", []string{"--policy", "magic", bad}, 2, "unknown policy \"magic\""},
		{"bad fixed", []string{"--policy", "fixed:x", bad}, 2, "want fixed:MS"},
		{"bad kind", []string{"--generate", "carrier-pigeon"}, 2, "unknown kind \"carrier-pigeon\""},
		{"bad audio", []string{"--audio", bad, neg}, 2, "bad.trace"},
		{"bad min delay", []string{"--min-delay-ms", "3000", bad}, 2, "--min-delay-ms 3000: want 0..2000"},
		{"bad conceal", []string{"--conceal-pct", "0", bad}, 2, "--conceal-pct 0: want 0.01..10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(append([]string{"jitter-replay"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.want) || strings.Count(errs, "\n") != 1 ||
				!strings.HasPrefix(errs, "robot-agent jitter-replay: ") {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line containing %q", code, errs, tt.code, tt.want)
			}
		})
	}
}

// TestJitterReplayGenerateAndReplay: a generated trace round-trips through
// the trace format and replays with every policy; the WAV is written.
func TestJitterReplayGenerateAndReplay(t *testing.T) {
	dir := t.TempDir()
	code, trace, errs := runCLI("jitter-replay", "--generate", "busywifi", "--seed", "3", "--duration", "40s")
	if code != 0 || !strings.HasPrefix(trace, "# robot-agent jitter-replay --generate busywifi") {
		t.Fatalf("generate: %d %q", code, errs)
	}
	path := filepath.Join(dir, "b.trace")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	wavPath := filepath.Join(dir, "out.wav")
	code, out, errs := runCLI("jitter-replay", "--policy", "adaptive,stall,fixed:200,oracle", "--wav", wavPath, path)
	if code != 0 {
		t.Fatalf("replay: %d %q", code, errs)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if !strings.Contains(out, "# peak RSS of this process ") {
		t.Errorf("no peak RSS line:\n%s", out)
	}
	if len(lines) != 4 || !strings.Contains(lines[0], "\tadaptive\tdelay p50 ") || !strings.Contains(lines[3], "oracle(") {
		t.Fatalf("output:\n%s", out)
	}
	for _, l := range lines {
		if !strings.Contains(l, "lost 0 samples") && !strings.Contains(l, "fixed") && !strings.Contains(l, "oracle") {
			t.Errorf("player lost audio: %s", l)
		}
	}
	st, err := os.Stat(wavPath)
	if err != nil || st.Size() < 40*24000*2 {
		t.Fatalf("wav: %v %v", st, err)
	}
}

// TestJitterReplayFloorAndBudget: --min-delay-ms and --conceal-pct reach the
// adaptive player: with a 300 ms floor and a 0.01 % budget on a busy Wi-Fi
// trace its median delay is at the floor and it conceals less than at the
// defaults.
func TestJitterReplayFloorAndBudget(t *testing.T) {
	code, trace, errs := runCLI("jitter-replay", "--generate", "busywifi", "--seed", "3", "--duration", "40s")
	if code != 0 {
		t.Fatalf("generate: %d %q", code, errs)
	}
	path := filepath.Join(t.TempDir(), "b.trace")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	replay := func(args ...string) (p50 int, concealed float64) {
		code, out, errs := runCLI(append(append([]string{"jitter-replay"}, args...), path)...)
		if code != 0 {
			t.Fatalf("replay %v: %d %q", args, code, errs)
		}
		i := strings.Index(out, "delay p50 ")
		j := strings.Index(out, "concealed ")
		if i < 0 || j < 0 {
			t.Fatalf("output: %s", out)
		}
		if _, err := fmt.Sscanf(out[i:], "delay p50 %dms", &p50); err != nil {
			t.Fatalf("p50 in %q: %v", out, err)
		}
		if _, err := fmt.Sscanf(out[j:], "concealed %f%%", &concealed); err != nil {
			t.Fatalf("concealed in %q: %v", out, err)
		}
		return p50, concealed
	}
	d0, c0 := replay()
	d1, c1 := replay("--min-delay-ms", "300", "--conceal-pct", "0.01")
	t.Logf("defaults: p50 %d ms, concealed %.2f %%; floor 300 ms, budget 0.01 %%: p50 %d ms, concealed %.2f %%", d0, c0, d1, c1)
	if d1 < 270 || d1 > 330 || d0 >= 270 || c1 >= c0 {
		t.Errorf("floor and budget not applied: p50 %d -> %d ms, concealed %.2f -> %.2f %%", d0, d1, c0, c1)
	}
}
