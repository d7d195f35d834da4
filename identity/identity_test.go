package identity

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/statetest"
)

func TestParseObservation(t *testing.T) {
	ok := []string{
		`{"uid":"alice","kind":"face","confidence":0.93}`,
		`{"uid":"u:42@cam-0","kind":"voiceprint"}`,
		`  {"uid":"a","kind":"face","param":{"bbox":[1,2,3,4]}}  `,
		`{"uid":"a","kind":"face","param":null}`,
	}
	for _, l := range ok {
		if _, err := ParseObservation([]byte(l), 4096); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	for _, tc := range []struct{ in, code, want string }{
		{``, "bad_message", "empty line"},
		{`{"uid":"alice"`, "bad_message", "invalid JSON"},
		{`not json`, "bad_message", "invalid JSON"},
		{`{"uid":"","kind":"face"}`, "bad_message", `field "uid" is ""`},
		{`{"uid":"a b","kind":"face"}`, "bad_message", `field "uid" is "a b"`},
		{`{"uid":"` + strings.Repeat("x", 129) + `","kind":"face"}`, "bad_message", `field "uid"`},
		{`{"uid":"a","kind":"iris"}`, "bad_message", `field "kind" is "iris"`},
		{`{"uid":"a","kind":"face","confidence":1.5}`, "bad_message", `field "confidence" is 1.5, want 0..1`},
		{`{"uid":"a","kind":"face","confidence":"high"}`, "bad_message", `field "confidence": JSON string`},
		{`{"uid":7,"kind":"face"}`, "bad_message", `field "uid": JSON number`},
		{`{"uid":"a","kind":"face","extra":1}`, "bad_message", `unknown field "extra"`},
		{`{"uid":"a","kind":"face"} {"uid":"b"}`, "bad_message", "more than one JSON value"},
		{`{"uid":"a","kind":"face","param":[1]}`, "bad_message", `"param" must be a JSON object`},
		{`{"uid":"a","kind":"face","param":{"x":"` + strings.Repeat("y", 1100) + `"}}`, "too_large", `"param" is`},
		{strings.Repeat(" ", 10) + `{"uid":"a","kind":"face","param":{"x":"` + strings.Repeat("y", 5000) + `"}}`, "too_large", "exceeds max_line 4096"},
		{"{\"uid\":\"a\xff\",\"kind\":\"face\"}", "bad_message", "not valid UTF-8"},
	} {
		_, err := ParseObservation([]byte(tc.in), 4096)
		if err == nil || Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60q: %v (code %s), want %s %q", tc.in, err, Code(err), tc.code, tc.want)
		}
	}
}

func FuzzParseObservation(f *testing.F) {
	f.Add([]byte(`{"uid":"alice","kind":"face","confidence":0.93,"param":{"a":1}}`))
	f.Add([]byte(`{"uid":"","kind":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseObservation(b, 4096)
		if err != nil {
			if c := Code(err); c != protocol.CodeBadMessage && c != protocol.CodeTooLarge {
				t.Fatalf("code %s for %v", c, err)
			}
			return
		}
		// Whatever we accept must make a face_info the gateway accepts.
		fi := &protocol.FaceInfo{Meta: protocol.Meta{EventID: "e"}, Identities: []protocol.Identity{{UID: o.UID, Kind: o.Kind}}, Param: o.Param}
		wire, err := protocol.Marshal(fi)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := protocol.DecodeFromRobot(wire); err != nil {
			t.Fatalf("accepted %q but gateway refuses: %v", b, err)
		}
	})
}

type tenv struct {
	clk *clock.Fake
	em  *statetest.Emitter
	reg *metrics.Registry
	tr  *Tracker
}

func newTracker(cfg Config) *tenv {
	e := &tenv{clk: clock.NewFake(), em: &statetest.Emitter{}, reg: metrics.NewRegistry()}
	e.tr = NewTracker(cfg, e.em, e.clk, slogDiscard(), e.reg)
	return e
}

func (e *tenv) see(uid string, at time.Duration) {
	c := 0.9
	e.tr.Observe(Observation{UID: uid, Kind: "face", Confidence: &c}, at)
}

func greets(em *statetest.Emitter) (uids []string) {
	for _, g := range statetest.Of[*protocol.GreetSignal](em) {
		uids = append(uids, g.UID)
	}
	return
}

func TestTrackerDedupAndGreets(t *testing.T) {
	e := newTracker(Config{DedupWindow: 2 * time.Second, Absence: 30 * time.Second, GreetCooldown: 5 * time.Minute})
	s := time.Second
	// alice in view for 10 s, observed twice a second.
	for at := 0 * s; at < 10*s; at += s / 2 {
		e.see("alice", at)
	}
	fi := statetest.Of[*protocol.FaceInfo](e.em)
	if len(fi) != 5 { // t = 0, 2, 4, 6, 8 s
		t.Fatalf("%d face_info in 10 s with a 2 s window, want 5", len(fi))
	}
	if fi[1].TS != (2*s).Microseconds() || fi[0].Identities[0].UID != "alice" || fi[0].Identities[0].Confidence != 0.9 {
		t.Fatalf("face_info %+v", fi[:2])
	}
	if e.reg.Value("robot_agent_identity_deduplicated_total") != 15 {
		t.Fatalf("deduplicated %d", e.reg.Value("robot_agent_identity_deduplicated_total"))
	}
	if g := greets(e.em); len(g) != 1 || g[0] != "alice" {
		t.Fatalf("greets %v, want [alice]", g)
	}
	// bob appears: his own face_info and greet.
	e.see("bob", 11*s)
	if g := greets(e.em); len(g) != 2 || g[1] != "bob" {
		t.Fatalf("greets %v", g)
	}
	// alice gone 20 s (< absence): not an appearance.
	e.see("alice", 29*s)
	if len(greets(e.em)) != 2 {
		t.Fatal("greeted alice after a short absence")
	}
	// alice gone 40 s (> absence) but inside the greet cooldown: face_info, no greet.
	n := len(statetest.Of[*protocol.FaceInfo](e.em))
	e.see("alice", 69*s)
	if len(statetest.Of[*protocol.FaceInfo](e.em)) != n+1 || len(greets(e.em)) != 2 {
		t.Fatal("return inside cooldown: want face_info and no greet")
	}
	// alice returns after absence and after the cooldown: greeted, reason returned.
	e.see("alice", 10*time.Minute)
	gs := statetest.Of[*protocol.GreetSignal](e.em)
	if len(gs) != 3 || gs[2].UID != "alice" || !strings.Contains(string(gs[2].Param), `"reason":"returned"`) {
		t.Fatalf("greets %v", greets(e.em))
	}
	if !strings.Contains(string(gs[0].Param), `"reason":"new"`) {
		t.Fatalf("first greet param %s", gs[0].Param)
	}
	if errs := e.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestTrackerEmitErrorsCounted(t *testing.T) {
	e := newTracker(Config{})
	e.em.SetFail(errOutboxFull)
	e.see("alice", 0)
	if e.reg.Value("robot_agent_identity_emit_errors_total") != 2 { // face_info + greet
		t.Fatalf("emit errors %d", e.reg.Value("robot_agent_identity_emit_errors_total"))
	}
	if e.reg.Value("robot_agent_identity_face_info_total") != 0 {
		t.Fatal("failed face_info counted as sent")
	}
}

type testErr string

func (e testErr) Error() string { return string(e) }

const errOutboxFull = testErr("uplink: outbox full")

type srv struct {
	s   *Server
	em  *statetest.Emitter
	reg *metrics.Registry
	clk *clock.Fake
}

func startServer(t *testing.T, cfg Config) *srv {
	t.Helper()
	r := &srv{em: &statetest.Emitter{}, reg: metrics.NewRegistry(), clk: clock.NewFake()}
	s, err := New(cfg, r.em, state.Deps{Clock: r.clk, Metrics: r.reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	r.s = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

func TestUnixSocketEndToEnd(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rec.sock")
	r := startServer(t, Config{Socket: sock, MaxLine: 256})
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(line string) map[string]any {
		t.Helper()
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		rep, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(rep), &m); err != nil {
			t.Fatalf("reply %q: %v", rep, err)
		}
		return m
	}
	r.clk.Advance(5 * time.Second)
	if m := send(`{"uid":"alice","kind":"face","confidence":0.9}`); m["ok"] != true {
		t.Fatalf("reply %v", m)
	}
	// Malformed lines: each refused with a clear error, counted, nothing emitted.
	bad := []struct{ line, code, want string }{
		{`{"uid":"alice"`, "bad_message", "invalid JSON"},
		{`{"uid":"bob","kind":"retina"}`, "bad_message", `field \"kind\" is \"retina\"`},
		{`{"uid":"bob","kind":"face","confidence":2}`, "bad_message", "want 0..1"},
		{`{"uid":"bob","kind":"face","x":"` + strings.Repeat("y", 400) + `"}`, "too_large", "exceeds max_line 256"},
	}
	for _, b := range bad {
		m := send(b.line)
		if m["ok"] != false || m["code"] != b.code {
			t.Errorf("%.50s: reply %v, want code %s", b.line, m, b.code)
		}
		if msg, _ := m["error"].(string); !strings.Contains(msg, strings.ReplaceAll(b.want, `\"`, `"`)) {
			t.Errorf("%.50s: error %q, want %q", b.line, msg, b.want)
		}
	}
	// The connection still works after a too-long line.
	if m := send(`{"uid":"bob","kind":"voiceprint"}`); m["ok"] != true {
		t.Fatalf("after bad lines: %v", m)
	}
	statetest.WaitUntil(t, "alice and bob seen and greeted", func() bool { return len(greets(r.em)) == 2 })
	fi := statetest.Of[*protocol.FaceInfo](r.em)
	if fi[0].TS != (5*time.Second).Microseconds() || fi[1].Identities[0].Kind != "voiceprint" {
		t.Fatalf("face_info %+v %+v", fi[0], fi[1])
	}
	if n := len(fi); n != 2 {
		t.Fatalf("%d face_info, want 2", n)
	}
	if n := r.reg.Value("robot_agent_identity_rejected_bad_message_total"); n != 3 {
		t.Fatalf("bad_message counted %d, want 3", n)
	}
	if n := r.reg.Value("robot_agent_identity_rejected_too_large_total"); n != 1 {
		t.Fatalf("too_large counted %d", n)
	}
}

func TestFloodIsRateLimited(t *testing.T) {
	r := startServer(t, Config{MaxRate: 10})
	refused := 0
	for range 25 {
		if err := r.s.SubmitLine([]byte(`{"uid":"alice","kind":"face"}`)); err != nil {
			if Code(err) != protocol.CodeRateLimited {
				t.Fatal(err)
			}
			refused++
		}
	}
	if refused != 15 {
		t.Fatalf("%d of 25 refused at max_rate 10 with a still clock, want 15", refused)
	}
	r.clk.Advance(500 * time.Millisecond) // 5 tokens back
	ok := 0
	for range 10 {
		if r.s.SubmitLine([]byte(`{"uid":"alice","kind":"face"}`)) == nil {
			ok++
		}
	}
	if ok != 5 {
		t.Fatalf("%d accepted after 500 ms, want 5", ok)
	}
	if n := r.reg.Value("robot_agent_identity_rejected_rate_limited_total"); n != 20 {
		t.Fatalf("rate_limited counted %d", n)
	}
	// One face_info and one greet despite 15 accepted observations.
	statetest.WaitUntil(t, "tracker drained", func() bool { return r.reg.Value("robot_agent_identity_deduplicated_total") == 14 })
	if len(statetest.Of[*protocol.FaceInfo](r.em)) != 1 || len(greets(r.em)) != 1 {
		t.Fatal("flood produced extra events")
	}
}

func TestHTTPEndpoint(t *testing.T) {
	r := startServer(t, Config{HTTP: "127.0.0.1:0"})
	url := "http://" + r.s.HTTPAddr() + "/v1/observations"
	resp, err := http.Post(url, "application/x-ndjson", strings.NewReader("{\"uid\":\"carol\",\"kind\":\"face\"}\n{\"uid\":\"\",\"kind\":\"face\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 (second line bad)", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 || lines[0] != `{"ok":true}` || !strings.Contains(lines[1], `field \"uid\" is \"\"`) {
		t.Fatalf("replies %q", lines)
	}
	statetest.WaitUntil(t, "carol greeted", func() bool { g := greets(r.em); return len(g) == 1 && g[0] == "carol" })
	resp2, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp2.StatusCode)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{HTTP: "0.0.0.0:8765"}, `identity.http: "0.0.0.0:8765": the recogniser endpoint must listen on loopback`},
		{Config{HTTP: "192.168.1.2:80"}, "must listen on loopback"},
		{Config{HTTP: "localhost"}, `identity.http: "localhost": want host:port`},
		{Config{MinConfidence: 2}, "identity.min_confidence: 2: want 0..1"},
		{Config{MaxLine: 10}, "identity.max_line: 10: want 64..65536"},
		{Config{DedupWindow: -time.Second}, "identity.dedup_window: -1s: want >= 0"},
		{Config{MaxRate: -1}, "identity.max_rate: -1: want 1..10000"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	for _, ok := range []Config{{}, {HTTP: "127.0.0.1:8765"}, {HTTP: "[::1]:1"}, {HTTP: "localhost:9"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// The simulated recogniser, through the real socket, gives one greet per
// appearance and a refused bad line.
func TestSimRecogniserOverSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rec.sock")
	r := startServer(t, Config{Socket: sock, Absence: 3 * time.Second, GreetCooldown: time.Second})
	send, c, err := DialUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sim := &SimRecogniser{Every: 250 * time.Millisecond, Steps: []SimStep{
		{At: 0, For: time.Second, UID: "alice", Kind: "face", Confidence: 0.9},
		{At: 1500 * time.Millisecond, Raw: `{"uid":"","kind":"face"}`},
		{At: 5 * time.Second, For: time.Second, UID: "alice", Kind: "face", Confidence: 0.9},
	}}
	done := make(chan error, 1)
	go func() { done <- sim.Run(context.Background(), r.clk, send) }()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
			time.Sleep(2 * time.Millisecond)
			r.clk.Advance(50 * time.Millisecond)
		}
	}
	statetest.WaitUntil(t, "two greets", func() bool { return len(greets(r.em)) == 2 })
	if n := r.reg.Value("robot_agent_identity_rejected_bad_message_total"); n != 1 {
		t.Fatalf("bad line counted %d", n)
	}
	statetest.Settle(t, "extra greets", func() bool { return len(greets(r.em)) == 2 })
}
