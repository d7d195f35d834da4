package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/internal/faultproxy"
)

// buildAgent builds the pure-Go robot-agent binary once per test run.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "robot-agent")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/robot-agent/robot-agent/cmd/robot-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build robot-agent: %v\n%s", err, out)
	}
	return bin
}

// agentProc is one run of the robot-agent binary; its debug log's
// "control event raised" lines feed the ledger (written after the event is
// on disk, so a line that made it into the pipe is an event the robot
// promised to deliver).
type agentProc struct {
	cmd         *exec.Cmd
	done        chan struct{}
	quarantined atomic.Int64
	restored    atomic.Int64
	mu          sync.Mutex
	tail        []string
}

func startAgent(t *testing.T, bin, cfg string, l *ledger) *agentProc {
	t.Helper()
	cmd := exec.Command(bin, "run", "--sim", "--quiet", "--config", cfg, "--speaker-wav", filepath.Join(filepath.Dir(cfg), "played.wav"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `msg="uplink: control event raised"`):
				if id := field(line, "event"); id != "" {
					l.raise(id)
				}
			case strings.Contains(line, "spool: damaged records quarantined"):
				a.quarantined.Add(1)
			case strings.Contains(line, "control events restored from the spool"):
				var n int64
				fmt.Sscan(field(line, "count"), &n)
				a.restored.Store(n)
			}
			if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
				a.mu.Lock()
				a.tail = append(a.tail, line)
				if len(a.tail) > 20 {
					a.tail = a.tail[1:]
				}
				a.mu.Unlock()
			}
		}
	}()
	return a
}

func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+2:]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return strings.Trim(v, `"`)
}

// kill sends SIGKILL and waits for the process and its log.
func (a *agentProc) kill() {
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	<-a.done
}

// term sends SIGTERM and returns the exit code and how long the exit took.
func (a *agentProc) term(t *testing.T) (int, time.Duration) {
	start := time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { a.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		a.kill()
		t.Fatal("agent did not exit within 15 s of SIGTERM")
	}
	<-a.done
	return a.cmd.ProcessState.ExitCode(), time.Since(start)
}

func writeAgentConfig(t *testing.T, dir, url string) string {
	t.Helper()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("chaos-token\n"), 0o600)
	cfg := filepath.Join(dir, "config.yaml")
	y := fmt.Sprintf("device:\n  id: chaos\ngateway:\n  url: %s\n  token_file: %s\nspool:\n  path: %s\nlog:\n  level: debug\n", url, tok, filepath.Join(dir, "spool"))
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// corruptSpool flips a byte inside the record of one spooled event (chosen
// from the middle) and appends a torn record, as power loss mid-write
// leaves it. It returns the id whose record was destroyed.
func corruptSpool(t *testing.T, dir string, l *ledger, from int) string {
	t.Helper()
	p := filepath.Join(dir, "spool", "spool.log")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	order := append([]string(nil), l.order...)
	l.mu.Unlock()
	for k := from + (len(order)-from)/2; k < len(order); k++ {
		id := order[k]
		i := bytes.Index(b, []byte(`"event_id":"`+id+`"`))
		if i < 0 {
			continue
		}
		b[i+3] ^= 0x20
		// A torn record right after the last one, where the
		// preallocated zeros start.
		end := len(bytes.TrimRight(b, "\x00"))
		torn := []byte{0x64, 0, 0, 0, 1, 2, 3, 4, 1, 5, 'b', 'o', 'o', 't'}
		if end+len(torn) > len(b) {
			b = append(b, make([]byte, end+len(torn)-len(b))...)
		}
		copy(b[end:], torn)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return id
	}
	t.Fatal("no spooled record found to corrupt")
	return ""
}

// TestKill9WithAcksWithheld: the agent binary is killed with SIGKILL at
// random points while events flow and the gateway acks nothing; then the
// spool is corrupted (one record damaged, a torn tail); then the gateway
// acks again and the agent is stopped with SIGTERM once everything is
// delivered. Every event the agent counted as raised reaches the gateway,
// except the one whose record was destroyed, which is quarantined and
// reported.
func TestKill9WithAcksWithheld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agent binary")
	}
	t.Parallel()
	start := time.Now()
	cycles := 5
	if long() {
		cycles = 200
	}
	bin := buildAgent(t)
	l := newLedger()
	g := newAccGateway(t, l)
	p, err := faultproxy.New(g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	cfg := writeAgentConfig(t, dir, "ws://"+p.Addr()+gateway.Path)
	g.withhold.Store(true)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	restoredMax := int64(0)
	for i := 0; i < cycles; i++ {
		a := startAgent(t, bin, cfg, l)
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		a.kill()
		restoredMax = max(restoredMax, a.restored.Load())
	}
	// One more run cut off from the gateway: its events are only in the
	// spool when it is killed. One of them gets corrupted.
	p.Refuse(true)
	p.KillAll()
	isolatedFrom, _, _ := l.counts()
	a := startAgent(t, bin, cfg, l)
	time.Sleep(1500 * time.Millisecond)
	a.kill()
	raisedBeforeCorruption, _, _ := l.counts()
	victim := corruptSpool(t, dir, l, isolatedFrom)
	p.Refuse(false)
	g.withhold.Store(false)
	a = startAgent(t, bin, cfg, l)
	time.Sleep(time.Second) // SIGTERM only once the agent handles it
	missing := l.waitDelivered(60*time.Second, victim)
	code, took := a.term(t)
	raised, delivered, dupes := l.counts()
	side, _ := filepath.Glob(filepath.Join(dir, "spool", "spool.log.corrupt-*"))
	report(row{scenario: fmt.Sprintf("kill -9 of the agent binary, acks withheld, then a corrupted spool (1 record + torn tail) and SIGTERM (exit %d in %v)", code, took.Round(time.Millisecond)),
		cycles: cycles, raised: raised, delivered: delivered, lost: len(missing), wireDupes: dupes, quarantined: int(a.quarantined.Load()),
		note:    fmt.Sprintf("lost = the destroyed record %s; %d raised before corruption; up to %d restored per start", victim, raisedBeforeCorruption, restoredMax),
		elapsed: time.Since(start)})
	if len(missing) != 1 || missing[0] != victim {
		a.mu.Lock()
		t.Fatalf("missing %d events (want only the destroyed %s): first %v\nagent warnings:\n%s", len(missing), victim, missing[:min(5, len(missing))], strings.Join(a.tail, "\n"))
	}
	if a.quarantined.Load() == 0 || len(side) == 0 {
		t.Errorf("corruption not reported (log lines %d, side files %v)", a.quarantined.Load(), side)
	}
	if code != 0 {
		t.Errorf("SIGTERM exit code %d", code)
	}
	if raised < cycles {
		t.Errorf("only %d events raised over %d cycles", raised, cycles)
	}
	t.Logf("%d cycles: raised %d, delivered %d, duplicates %d, SIGTERM exit %d after %v", cycles, raised, delivered, dupes, code, took)
}
