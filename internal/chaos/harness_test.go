package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// long reports whether the long (make chaos) version runs.
func long() bool { return os.Getenv("CHAOS") == "long" }

// row is one line of the summary table.
type row struct {
	scenario          string
	cycles            int
	raised, delivered int
	lost, wireDupes   int
	decisions, acted  int
	reconnectP50, P95 time.Duration
	quarantined       int
	note              string
	elapsed           time.Duration
}

var (
	tableMu sync.Mutex
	table   []row
)

func report(r row) {
	tableMu.Lock()
	table = append(table, r)
	tableMu.Unlock()
}

func TestMain(m *testing.M) {
	code := m.Run()
	tableMu.Lock()
	defer tableMu.Unlock()
	if len(table) > 0 {
		fmt.Println(formatTable(table))
	}
	os.Exit(code)
}

func formatTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| scenario | cycles | events raised | delivered (unique) | lost | wire duplicates | decisions acked / acted on | reconnect p50 / p95 | quarantined | time | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		rc := "–"
		if r.P95 > 0 {
			rc = fmt.Sprintf("%v / %v", r.reconnectP50.Round(time.Millisecond), r.P95.Round(time.Millisecond))
		}
		dec := "–"
		if r.decisions > 0 {
			dec = fmt.Sprintf("%d / %d", r.decisions, r.acted)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %s | %d | %v | %s |\n",
			r.scenario, r.cycles, r.raised, r.delivered, r.lost, r.wireDupes, dec, rc, r.quarantined, r.elapsed.Round(time.Second), r.note)
	}
	return b.String()
}

// ledger is the event-id accounting: what the robot raised, what the
// gateway application received.
type ledger struct {
	mu       sync.Mutex
	raised   map[string]bool
	received map[string]int
	order    []string // raised, in order
}

func newLedger() *ledger { return &ledger{raised: map[string]bool{}, received: map[string]int{}} }

func (l *ledger) raise(id string) {
	l.mu.Lock()
	if !l.raised[id] {
		l.raised[id] = true
		l.order = append(l.order, id)
	}
	l.mu.Unlock()
}

func (l *ledger) receive(id string) {
	l.mu.Lock()
	l.received[id]++
	l.mu.Unlock()
}

// missing returns the raised ids the gateway has not received.
func (l *ledger) missing() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range l.order {
		if l.received[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

func (l *ledger) counts() (raised, delivered, dupes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, n := range l.received {
		if l.raised[id] {
			delivered++
		}
		dupes += n - 1
	}
	return len(l.raised), delivered, dupes
}

// waitDelivered waits until every raised id except those in except is
// received, or d passes, and returns what is missing.
func (l *ledger) waitDelivered(d time.Duration, except ...string) []string {
	deadline := time.Now().Add(d)
	for {
		m := l.missing()
		n := 0
		for _, id := range m {
			if !slices.Contains(except, id) {
				n++
			}
		}
		if n == 0 || time.Now().After(deadline) {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// accGateway is the embedded gateway behind an accounting application, on
// a fixed address, restartable (each restart is a new gateway instance
// whose session and event ids start again from 1, as after a deploy).
type accGateway struct {
	t        *testing.T
	addr     string
	ledger   *ledger
	withhold atomic.Bool // do not ack robot events
	token    string

	mu           sync.Mutex
	gw           *gateway.Server
	srv          *http.Server
	instance     int
	upAt         time.Time
	reconnect    []time.Duration // gateway back → first session
	waiting      bool
	decisions    map[string]bool // instance/session/arbiter id acked by the robot
	arbiters     map[string]bool // arbiter event ids sent, by instance/session
	nextDecision int
}

func newAccGateway(t *testing.T, l *ledger) *accGateway {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &accGateway{t: t, addr: ln.Addr().String(), ledger: l, token: "chaos-token", decisions: map[string]bool{}, arbiters: map[string]bool{}}
	g.serve(ln)
	t.Cleanup(func() { g.stop(false) })
	return g
}

func (g *accGateway) url() string { return "ws://" + g.addr + gateway.Path }

func (g *accGateway) start() {
	var ln net.Listener
	var err error
	for i := 0; i < 100; i++ {
		if ln, err = net.Listen("tcp", g.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		g.t.Fatalf("gateway restart: %v", err)
	}
	g.serve(ln)
}

func (g *accGateway) serve(ln net.Listener) {
	g.mu.Lock()
	g.instance++
	inst := g.instance
	g.nextDecision = 0 // a restarted gateway numbers its ids from 1 again
	g.mu.Unlock()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var gw *gateway.Server
	hooks := gateway.Hooks{
		BeforeAck: func(s *gateway.Session, m protocol.Message) bool { return !g.withhold.Load() },
		// The gateway hands a re-sent event to its application once; the
		// ledger counts every copy on the wire.
		OnDuplicate: func(s *gateway.Session, m protocol.Message) {
			if id := m.Envelope().EventID; id != "" {
				g.ledger.receive(id)
			}
		},
		OnMsg: func(s *gateway.Session, m protocol.Message) {
			switch v := m.(type) {
			case *protocol.Ack:
				g.mu.Lock()
				key := fmt.Sprintf("%d/%s/%s", inst, s.ID, v.EventID)
				if g.arbiters[key] {
					g.decisions[key] = true
				}
				g.mu.Unlock()
			case *protocol.Error:
			case *protocol.FunctionCall:
				g.ledger.receive(v.EventID)
				// The application decides: delegate back to the robot.
				g.mu.Lock()
				g.nextDecision++
				id := fmt.Sprintf("%s-d-%d", s.ID, g.nextDecision)
				g.arbiters[fmt.Sprintf("%d/%s/%s", inst, s.ID, id)] = true
				g.mu.Unlock()
				// The param names the decision uniquely, so the robot's
				// side can be matched even though ids are reused.
				param, _ := json.Marshal(map[string]string{"k": fmt.Sprintf("%d/%s/%s", inst, s.ID, id)})
				go s.Send(&protocol.Arbiter{Meta: protocol.Meta{Type: protocol.TypeArbiter, EventID: id}, Ref: v.EventID, Decision: protocol.DecisionDelegate, Param: param})
			default:
				if id := m.Envelope().EventID; id != "" {
					g.ledger.receive(id)
				}
			}
		},
	}
	gw, err := gateway.New(gateway.Config{Token: g.token, NoEcho: true, NoGreeting: true, Decision: "none"}, clock.NewReal(), metrics.NewRegistry(), quiet, hooks)
	if err != nil {
		g.t.Fatal(err)
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 5 * time.Second}
	g.mu.Lock()
	g.gw, g.srv = gw, srv
	g.upAt = time.Now()
	g.waiting = inst > 1
	g.mu.Unlock()
	go srv.Serve(ln)
	go func() {
		for {
			_, err := gw.NextSession(context.Background())
			if err != nil {
				return
			}
			g.mu.Lock()
			if g.gw != gw {
				g.mu.Unlock()
				return
			}
			if g.waiting {
				g.reconnect = append(g.reconnect, time.Since(g.upAt))
				g.waiting = false
			}
			g.mu.Unlock()
		}
	}()
}

// stop ends the gateway: graceful sends go_away(after) and waits for the
// robots to leave; otherwise connections are cut (a crash).
func (g *accGateway) stop(graceful bool) {
	g.stopWithGoAway(graceful, time.Second)
}

func (g *accGateway) stopWithGoAway(graceful bool, after time.Duration) {
	g.mu.Lock()
	gw, srv := g.gw, g.srv
	g.gw, g.srv = nil, nil
	g.mu.Unlock()
	if gw == nil {
		return
	}
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		gw.GoAway(ctx, "restart", after, 0)
		cancel()
	}
	srv.Close()
	for _, ss := range gw.Sessions() {
		ss.Abort()
	}
}

// decisionsAcked returns how many decisions the robot acknowledged.
func (g *accGateway) decisionsAcked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.decisions)
}

// checkDecisions: every decision the robot acknowledged was acted on, and
// none twice. (The robot may act on a decision whose ack the network then
// lost: acted ≥ acked.) It returns the number of problems.
func (g *accGateway) checkDecisions(t *testing.T, acted map[string]int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	bad := 0
	for k := range g.decisions {
		if acted[k] == 0 {
			bad++
			if bad <= 5 {
				t.Errorf("decision %s acked by the robot but not acted on", k)
			}
		}
	}
	for k, n := range acted {
		if n > 1 {
			bad++
			if bad <= 5 {
				t.Errorf("decision %s acted on %d times", k, n)
			}
		}
	}
	return bad
}

func (g *accGateway) reconnects() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reconnect)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
