// Package conformance is a kit for gateway authors: a scripted robot that
// plays protocol v1.1 (docs/protocol.md) against any gateway and reports,
// per spec section, which rules the gateway keeps (PASS) and which it
// breaks (FAIL), with the evidence. `robot-agent conformance` runs it.
//
// The robot it plays is deliberately exact and sometimes deliberately bad:
// it sends utterances, state, face and greeting events and a function call,
// reconnects and asks to resume, goes silent to test the keepalive, and
// sends malformed and oversized frames.
//
// # Concurrency
//
// Run runs the checks one after another on one device id (a gateway may
// bind the token to it, and a second connection would replace the first).
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// Errors returned by Run for problems that stop the kit before any check.
var (
	ErrConfig      = errors.New("conformance: bad configuration")
	ErrUnreachable = errors.New("conformance: gateway unreachable")
)

// Config says which gateway to test and how.
type Config struct {
	URL      string // ws:// or wss:// URL of the gateway's /v1/robot endpoint
	Token    string // a bearer token the gateway accepts for DeviceID
	DeviceID string // default "conformance-robot"
	// Wait is how long to wait for an answer the spec requires (ack,
	// error, arbiter decision...). Default 3 s.
	Wait time.Duration
	// HelloTimeout is how long to wait for the gateway hello. Default 5 s.
	HelloTimeout time.Duration
	// Only, if set, runs only the checks whose ID starts with one of these.
	Only []string
	// Progress, if set, gets one line per check as it finishes.
	Progress io.Writer
}

// Status of one check.
type Status string

// Statuses.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP" // could not be checked (a previous step failed, or the gateway does not offer the feature)
)

// Result is one row of the report.
type Result struct {
	ID       string // stable id, "<section>/<name>", e.g. "5.3/ack-state"
	Section  string
	Title    string
	Status   Status
	Evidence string
	Took     time.Duration
}

// Report is the outcome of a run.
type Report struct {
	Gateway string
	Results []Result
}

// Failed returns the number of failed checks.
func (r Report) Failed() int {
	n := 0
	for _, x := range r.Results {
		if x.Status == Fail {
			n++
		}
	}
	return n
}

// Find returns the result with the given id.
func (r Report) Find(id string) (Result, bool) {
	for _, x := range r.Results {
		if x.ID == id {
			return x, true
		}
	}
	return Result{}, false
}

// Write prints the report as a table, one row per check, in spec order.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "robot-agent conformance: %s (protocol v1.%d, docs/protocol.md)\n\n", r.Gateway, protocol.MinorVersion)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tCHECK\tRESULT\tEVIDENCE")
	for _, x := range r.Results {
		ev := strings.ReplaceAll(x.Evidence, "\n", " ")
		fmt.Fprintf(tw, "§%s\t%s\t%s\t%s\n", x.Section, x.Title, x.Status, ev)
	}
	tw.Flush()
	pass, fail, skip := 0, 0, 0
	for _, x := range r.Results {
		switch x.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		default:
			skip++
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", pass, fail, skip)
}

// check is one conformance check.
type check struct {
	id, title string
	run       func(ctx context.Context, r *runner) (Status, string)
}

// Check describes one check (for documentation and the conformance map).
type Check struct{ ID, Section, Title string }

// Checks lists every check Run performs, in order.
func Checks() []Check {
	var out []Check
	for _, c := range checks {
		out = append(out, Check{ID: c.id, Section: section(c.id), Title: c.title})
	}
	return out
}

func section(id string) string { s, _, _ := strings.Cut(id, "/"); return s }

type runner struct {
	cfg    Config
	bootID string
	seq    int
	t0     time.Time
	// state shared between checks
	lastSession string
	helloMS     protocol.Keepalive // keepalive the gateway announced
	audited     struct {
		msgs, frames int
		problems     []string
	}
}

func (r *runner) mono() int64 { return time.Since(r.t0).Microseconds() }

// Run checks the gateway. It returns an error only when no check could run
// (bad configuration, gateway unreachable, credentials refused); rule
// violations are FAIL rows in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.DeviceID == "" {
		cfg.DeviceID = "conformance-robot"
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 3 * time.Second
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = time.Duration(protocol.HelloTimeoutMS) * time.Millisecond
	}
	rep := Report{Gateway: cfg.URL}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return rep, fmt.Errorf("%w: gateway URL %q is not a ws:// or wss:// URL", ErrConfig, cfg.URL)
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return rep, fmt.Errorf("%w: the token is empty", ErrConfig)
	}
	var b [16]byte
	rand.Read(b[:])
	r := &runner{cfg: cfg, bootID: hex.EncodeToString(b[:]), t0: time.Now()}
	// Start-up probe: the kit needs a gateway that accepts it.
	c, err := r.connect(ctx, "")
	if err != nil {
		return rep, fmt.Errorf("%w: %s: %v", ErrUnreachable, cfg.URL, err)
	}
	c.closeWith(protocol.CloseNormal, "conformance probe")
	c.waitClosed(2 * time.Second)
	c.abort()
	for _, ch := range checks {
		if !selected(cfg.Only, ch.id) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		st, ev := ch.run(ctx, r)
		res := Result{ID: ch.id, Section: section(ch.id), Title: ch.title, Status: st, Evidence: ev, Took: time.Since(start)}
		rep.Results = append(rep.Results, res)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%-4s §%-5s %s: %s\n", st, res.Section, ch.title, ev)
		}
	}
	sort.SliceStable(rep.Results, func(i, j int) bool { return sectionLess(rep.Results[i].Section, rep.Results[j].Section) })
	return rep, ctx.Err()
}

func selected(only []string, id string) bool {
	if len(only) == 0 {
		return true
	}
	for _, p := range only {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// sectionLess orders "2.3" < "2.10" < "3.1".
func sectionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}
