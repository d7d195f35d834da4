package main

// End-to-end tests of the robot control lane (state modules, faces and
// greetings, function calls, skills): the real agent with the simulated
// robot (modules.NewSim) talks to the embedded gateway over a real
// WebSocket on loopback, on the real clock. Each test replaces the
// simulator's scripted button presses and recogniser with its own input so
// that every event at the gateway is one the test caused (the IMU playback
// and the fake sysfs keep running as background traffic).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/sim"
	"github.com/robot-agent/robot-agent/identity"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	simgpio "github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/modules"
	"github.com/robot-agent/robot-agent/uplink"
	"github.com/robot-agent/robot-agent/volume"
)

// Pins of modules.SimConfig.
const (
	pinButtonHead = "GPIO27" // button_head: pull up, active low, 20 ms debounce, raises button_press
	pinBumpFront  = "GPIO22" // bump_front: pull up, active low, 10 ms debounce
	pinLEDEyes    = "GPIO17" // led_eyes: output, safe low
)

// pinWrite is one write to a simulated output pin, as SimPins logs it.
type pinWrite struct {
	Pin, Level string
	At         time.Duration // clock Mono when logged
}

// robotLogSink collects the agent's log: the simulated GPIO writes (the
// "write log" of the pin fakes) and the text, printed if the test fails.
type robotLogSink struct {
	clk    clock.Clock
	mu     sync.Mutex
	writes []pinWrite
	text   bytes.Buffer
}

func (s *robotLogSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.Write(p)
}

// pinWrites returns the writes to pin from index from on (all pins if pin
// is empty) and the total number of writes logged so far.
func (s *robotLogSink) pinWrites(pin string, from int) ([]pinWrite, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pinWrite
	for _, w := range s.writes[min(from, len(s.writes)):] {
		if pin == "" || w.Pin == pin {
			out = append(out, w)
		}
	}
	return out, len(s.writes)
}

func (s *robotLogSink) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.text.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// robotLogHandler is the slog.Handler in front of robotLogSink.
type robotLogHandler struct {
	sink  *robotLogSink
	inner slog.Handler
}

func (h robotLogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h robotLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "sim gpio: output" {
		w := pinWrite{At: h.sink.clk.Mono()}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "pin":
				w.Pin = a.Value.String()
			case "level":
				w.Level = a.Value.String()
			}
			return true
		})
		h.sink.mu.Lock()
		h.sink.writes = append(h.sink.writes, w)
		h.sink.mu.Unlock()
	}
	return h.inner.Handle(ctx, r)
}

func (h robotLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return robotLogHandler{h.sink, h.inner.WithAttrs(as)}
}

func (h robotLogHandler) WithGroup(g string) slog.Handler {
	return robotLogHandler{h.sink, h.inner.WithGroup(g)}
}

// robotRig is a running agent with the simulated robot and the embedded
// gateway.
type robotRig struct {
	*runningAgent
	clk clock.Clock
	reg *metrics.Registry
	log *robotLogSink
	sim *modules.Sim
}

type rigOptions struct {
	gw   gateway.Config
	yaml string // extra configuration sections (state, skills, identity)
	// observer, if set, is added after the robot's own link observers (the
	// arbiter's dead-man), so it sees each link change after the dead-man
	// has acted.
	observer uplink.LinkObserver
	clk      clock.Clock // nil: a new real clock
}

// startRobot starts the agent with --sim semantics: no state section in
// yaml means modules.SimConfig. The simulator's scripted button activity
// and recogniser are replaced by empty scripts; tests drive the pins and
// the recogniser endpoint themselves.
func startRobot(t *testing.T, o rigOptions) *robotRig {
	t.Helper()
	clk := o.clk
	if clk == nil {
		clk = clock.NewReal()
	}
	r := &robotRig{clk: clk, reg: metrics.NewRegistry(), log: &robotLogSink{clk: clk}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log (tail):\n%s", r.log.tail(12000))
		}
	})
	mic, err := sim.NewMic(sim.MicConfig{Script: &sim.SpeechScript{}, Seed: 7}, clk)
	if err != nil {
		t.Fatal(err)
	}
	spk, err := sim.NewSpeaker(sim.SpeakerConfig{PeriodFrames: 240}, clk)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Device.ID = "e2e-robot"
	if o.yaml != "" {
		if err := config.Decode(strings.NewReader(o.yaml), &cfg, extraSections...); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	gw := o.gw
	gw.Token, gw.NoEcho = "sim-token", true
	log := slog.New(robotLogHandler{sink: r.log, inner: slog.NewTextHandler(r.log, nil)})
	a, err := newAgent(cfg, agentOptions{sim: true, mic: mic, speaker: spk, gwConfig: &gw}, clk, r.reg, log)
	if err != nil {
		t.Fatal(err)
	}
	r.sim = a.robot.sim
	if r.sim == nil {
		t.Fatal("agent built with sim: true has no simulated robot")
	}
	// Only what the test does happens on the pins and the recogniser.
	r.sim.Scenario = &simgpio.Scenario{}
	r.sim.Recogniser = &identity.SimRecogniser{}
	if o.observer != nil {
		a.client.AddObserver(o.observer)
	}
	r.runningAgent = runAgent(t, a)
	return r
}

// session waits for the next robot session at the gateway and for the
// robot to see the link up (so the arbiter accepts skills).
func (r *robotRig) session(t *testing.T) *gateway.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := r.a.gw.NextSession(ctx)
	if err != nil {
		t.Fatalf("no robot session at the gateway: %v", err)
	}
	waitUntil(t, 5*time.Second, "robot link up", r.a.client.Up)
	return s
}

// pin returns a simulated pin of the robot.
func (r *robotRig) pin(name string) *simgpio.SimPin { return r.sim.Pins.Get(name) }

// bounce moves an input line through levels, back to back (a contact
// bounce much shorter than any debounce, even on a loaded machine), and
// leaves it at the last one.
func bounce(p *simgpio.SimPin, levels ...gpio.Level) { p.Edge(levels...) }

// gwMsg is a control message the gateway received, with its receipt.
type gwMsg[T protocol.Message] struct {
	M       T
	At      time.Duration
	Session string
}

// received returns the control messages of type T the gateway has received
// (in order) for which keep (if not nil) is true.
func received[T protocol.Message](gw *gateway.Server, keep func(T) bool) []gwMsg[T] {
	var out []gwMsg[T]
	for _, ev := range gw.Events() {
		if m, ok := ev.Msg.(T); ok && (keep == nil || keep(m)) {
			out = append(out, gwMsg[T]{m, ev.At, ev.Session})
		}
	}
	return out
}

func stateNamed(name string) func(*protocol.State) bool {
	return func(s *protocol.State) bool { return s.StateName == name }
}

// active decodes a gpio state value.
func active(t *testing.T, s *protocol.State) bool {
	t.Helper()
	var v struct {
		Active *bool `json:"active"`
	}
	if err := json.Unmarshal(s.StateValue, &v); err != nil || v.Active == nil {
		t.Fatalf("state %s value %s: want {\"active\":bool} (%v)", s.StateName, s.StateValue, err)
	}
	return *v.Active
}

// sendSkill sends a skill from the gateway and returns its event_id.
func sendSkill(t *testing.T, s *gateway.Session, skill, args string) string {
	t.Helper()
	m := &protocol.Skill{Skill: skill}
	if args != "" {
		m.Args = json.RawMessage(args)
	}
	if err := s.Send(m); err != nil {
		t.Fatalf("send skill %s: %v", skill, err)
	}
	if m.EventID == "" {
		t.Fatal("gateway assigned no event_id to the skill")
	}
	return m.EventID
}

// skillResult waits for the skill_result answering ref and checks that it
// is the only one.
func (r *robotRig) skillResult(t *testing.T, ref string, d time.Duration) *protocol.SkillResult {
	t.Helper()
	var got []gwMsg[*protocol.SkillResult]
	byRef := func(m *protocol.SkillResult) bool { return m.Ref == ref }
	waitUntil(t, d, "skill_result for "+ref, func() bool {
		got = received(r.a.gw, byRef)
		return len(got) > 0
	})
	return got[0].M
}

// drained waits until the control-lane outbox holds nothing unacknowledged.
func (r *robotRig) drained(t *testing.T) {
	t.Helper()
	waitUntil(t, 3*time.Second, "control outbox drained (every event acked by the gateway)", func() bool {
		return r.a.client.Outbox().Len() == 0
	})
}

// TestRobotButtonBounceIsOneStateEvent: a bouncing press of the head
// button is one gpio.button_head state event at the gateway (and one
// function_call), stamped with the capture time of the burst's first edge,
// carrying an event_id the gateway acks; a glitch shorter than the debounce
// gives no event.
func TestRobotButtonBounceIsOneStateEvent(t *testing.T) {
	r := startRobot(t, rigOptions{gw: gateway.Config{Decision: protocol.DecisionOverride}})
	r.session(t)
	gw := r.a.gw
	head := stateNamed("gpio.button_head")
	waitUntil(t, 3*time.Second, "initial gpio.button_head state", func() bool { return len(received(gw, head)) == 1 })
	if s := received(gw, head)[0].M; active(t, s) {
		t.Fatalf("initial button state %s, want released", s.StateValue)
	}
	const debounce = 20 * time.Millisecond // SimConfig's button_head (the default)
	p := r.pin(pinButtonHead)
	acked0 := r.reg.Value("robot_agent_control_acked_total")
	edges0 := r.reg.Value("robot_agent_gpio_edges_total")

	t0 := r.clk.Mono()
	bounce(p, gpio.Low, gpio.High, gpio.Low, gpio.High, gpio.Low) // press
	waitUntil(t, 3*time.Second, "press state event", func() bool { return len(received(gw, head)) >= 2 })
	if n := r.reg.Value("robot_agent_gpio_edges_total") - edges0; n != 5 {
		t.Fatalf("debouncer saw %d edges of the bouncing press, want 5", n)
	}
	time.Sleep(10 * debounce) // any extra event from the bounce would be here by now
	t1 := r.clk.Mono()
	bounce(p, gpio.High, gpio.Low, gpio.High) // release
	waitUntil(t, 3*time.Second, "release state event", func() bool { return len(received(gw, head)) >= 3 })
	time.Sleep(10 * debounce)

	// A glitch: the line dips and comes back within the debounce.
	glitches0 := r.reg.Value("robot_agent_gpio_glitches_total")
	bounce(p, gpio.Low, gpio.High)
	waitUntil(t, 2*time.Second, "glitch counted", func() bool { return r.reg.Value("robot_agent_gpio_glitches_total") > glitches0 })
	time.Sleep(5 * debounce)
	r.drained(t)

	evs := received(gw, head)
	if len(evs) != 3 {
		for _, e := range evs {
			t.Logf("gpio.button_head %s event_id=%s ts=%d", e.M.StateValue, e.M.EventID, e.M.TS)
		}
		t.Fatalf("gateway got %d gpio.button_head events, want 3: initial, one per bouncing press/release, none for the glitch", len(evs))
	}
	ids := map[string]bool{}
	for i, e := range evs {
		if e.M.EventID == "" || ids[e.M.EventID] {
			t.Fatalf("event %d has event_id %q: want a unique non-empty id", i, e.M.EventID)
		}
		ids[e.M.EventID] = true
	}
	for i, c := range []struct {
		want  bool
		edges time.Duration // Mono before the first edge of the burst
	}{{true, t0}, {false, t1}} {
		e := evs[i+1]
		if got := active(t, e.M); got != c.want {
			t.Fatalf("event %d: active=%v, want %v", i+1, got, c.want)
		}
		ts := time.Duration(e.M.TS) * time.Microsecond
		// The capture time of the burst's first edge: not before the test
		// moved the line, and at least one debounce before the event could
		// be published (so not the publish time).
		if ts < c.edges.Truncate(time.Microsecond) || ts > e.At-debounce {
			t.Fatalf("event %d ts %v: want the first edge's capture time, in [%v, receipt %v - debounce %v]", i+1, ts, c.edges, e.At, debounce)
		}
		t.Logf("%s: capture %v after the first edge, received %v after capture", e.M.StateValue, ts-c.edges, e.At-ts)
	}
	// Acked: the gateway acked everything (outbox drained above), at least
	// the two state events and the function call.
	if n := r.reg.Value("robot_agent_control_acked_total") - acked0; n < 3 {
		t.Fatalf("robot saw %d acks since the press, want >= 3", n)
	}
	// The press raised exactly one button_press function call.
	fcs := received(gw, func(m *protocol.FunctionCall) bool { return m.FunctionCall.Type == "button_press" })
	if len(fcs) != 1 {
		t.Fatalf("gateway got %d button_press function calls, want 1 for one bouncing press", len(fcs))
	}
	if n := r.reg.Value("robot_agent_state_emit_errors_total"); n != 0 {
		t.Fatalf("state emit errors = %d", n)
	}
}

// TestRobotIMUCoalescedAtPublishRate: the IMU plays the embedded 200 Hz
// recording; state events reach the gateway coalesced, at the configured
// publish rate (20 Hz here, not the default 10) and not above it.
func TestRobotIMUCoalescedAtPublishRate(t *testing.T) {
	const publishHz, sampleHz = 20, 200
	// heartbeat 1ms: every publish period sends every key, so the rate on
	// the wire is exactly the coalescer's flush rate.
	r := startRobot(t, rigOptions{yaml: `
state:
  imu: {enabled: true, publish_hz: 20, heartbeat: 1ms}
`})
	r.session(t)
	time.Sleep(2 * time.Second)
	r.drained(t)
	r.stop(t) // modules stop first, then the uplink drains: counts are final

	samples := r.reg.Value("robot_agent_imu_samples_total")
	if samples < sampleHz { // ~2 s at 200 Hz; a loaded box may skip ticks
		t.Fatalf("IMU read %d samples in 2 s, want ~%d", samples, 2*sampleHz)
	}
	for _, key := range []string{"imu.accel", "imu.gyro", "imu.tilt"} {
		evs := received(r.a.gw, stateNamed(key))
		// One event per key per flush, one flush per sample_hz/publish_hz
		// samples: the 200 Hz samples are coalesced 10:1.
		if want := samples / (sampleHz / publishHz); int64(len(evs)) != want {
			t.Fatalf("%s: gateway got %d events for %d samples, want %d (one per %d samples)", key, len(evs), samples, want, sampleHz/publishHz)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].M.TS <= evs[i-1].M.TS || evs[i].M.EventID == evs[i-1].M.EventID {
				t.Fatalf("%s events %d and %d: ts %d then %d, ids %s %s: want increasing capture times, distinct ids", key, i-1, i, evs[i-1].M.TS, evs[i].M.TS, evs[i-1].M.EventID, evs[i].M.EventID)
			}
		}
		span := time.Duration(evs[len(evs)-1].M.TS-evs[0].M.TS) * time.Microsecond
		rate := float64(len(evs)-1) / span.Seconds()
		t.Logf("%s: %d events over %v of capture time: %.1f/s (publish_hz %d)", key, len(evs), span.Round(time.Millisecond), rate, publishHz)
		if rate > publishHz*1.1 {
			t.Fatalf("%s: %.1f events/s, above publish_hz %d", key, rate, publishHz)
		}
		if rate < publishHz*0.4 {
			t.Fatalf("%s: %.1f events/s, want about publish_hz %d", key, rate, publishHz)
		}
	}
	// The recording starts with the robot standing still: gravity on +z.
	acc := received(r.a.gw, stateNamed("imu.accel"))[0].M
	var v struct{ X, Y, Z float64 }
	if err := json.Unmarshal(acc.StateValue, &v); err != nil || v.Z < 9.3 || v.Z > 10.3 || v.X*v.X+v.Y*v.Y > 0.25 {
		t.Fatalf("first imu.accel %s: want gravity on +z (err %v)", acc.StateValue, err)
	}
}

// TestRobotFacesAndOneGreetPerAppearance: recogniser lines on the real Unix
// socket become face_info events (deduplicated inside dedup_window) and
// exactly one greet_signal per appearance; the gateway greets and sends
// its greet skill, which blinks the robot's eyes.
func TestRobotFacesAndOneGreetPerAppearance(t *testing.T) {
	dir, err := os.MkdirTemp("", "ra-e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "rec.sock")
	const dedup, absence = 400 * time.Millisecond, 700 * time.Millisecond
	r := startRobot(t, rigOptions{
		yaml: fmt.Sprintf("identity: {socket: %s, dedup_window: 400ms, absence: 700ms, greet_cooldown: 1ms}\n", sock),
		gw: gateway.Config{GreetSkill: &protocol.Skill{Skill: "gpio.blink",
			Args: json.RawMessage(`{"pin":"led_eyes","times":1,"period_ms":100}`)}},
	})
	r.session(t)
	var send func([]byte) error
	waitUntil(t, 3*time.Second, "recogniser socket", func() bool {
		s, c, err := identity.DialUnix(sock)
		if err != nil {
			return false
		}
		t.Cleanup(func() { c.Close() })
		send = s
		return true
	})
	obs := func(uid, kind string) {
		t.Helper()
		if err := send([]byte(`{"uid":"` + uid + `","kind":"` + kind + `","confidence":0.9}`)); err != nil {
			t.Fatalf("recogniser line for %s refused: %v", uid, err)
		}
	}
	_, writes0 := r.log.pinWrites("", 0)

	// alice in view for 1 s, observed every 100 ms.
	start := r.clk.Mono()
	var last time.Duration
	for i := 0; i <= 10; i++ {
		last = r.clk.Mono()
		obs("alice", "face")
		if i < 10 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	// bob, briefly; and a malformed line, refused with a reason.
	obs("bob", "face")
	obs("bob", "face")
	if err := send([]byte(`{"uid":"","kind":"face"}`)); err == nil || !strings.Contains(err.Error(), "bad_message") {
		t.Fatalf("malformed recogniser line: got %v, want a bad_message refusal", err)
	}
	// alice leaves for longer than the absence, then comes back.
	time.Sleep(absence + 300*time.Millisecond)
	back := r.clk.Mono()
	for i := 0; i < 3; i++ {
		obs("alice", "voiceprint")
		time.Sleep(100 * time.Millisecond)
	}
	waitUntil(t, 3*time.Second, "3 greet skills answered", func() bool { return len(received[*protocol.SkillResult](r.a.gw, nil)) >= 3 })
	time.Sleep(200 * time.Millisecond)
	r.drained(t)

	gw := r.a.gw
	faces := func(uid string, from, to time.Duration) int {
		n := 0
		for _, f := range received[*protocol.FaceInfo](gw, nil) {
			ts := time.Duration(f.M.TS) * time.Microsecond
			if f.M.EventID == "" || len(f.M.Identities) != 1 {
				t.Fatalf("face_info %+v: want an event_id and one identity", f.M)
			}
			if id := f.M.Identities[0]; id.UID == uid && ts >= from && ts < to {
				if id.Confidence != 0.9 {
					t.Fatalf("face_info confidence %v, want 0.9", id.Confidence)
				}
				n++
			}
		}
		return n
	}
	// 11 observations of alice over ~1 s with a 400 ms dedup window: one
	// face_info on appearance, then at most one per window.
	if n, most := faces("alice", start, back), int((last-start)/dedup)+1; n < 2 || n > most {
		t.Fatalf("alice's first appearance gave %d face_info events for 11 observations over %v, want 2..%d (dedup_window %v)", n, last-start, most, dedup)
	}
	if n := faces("bob", start, back); n != 1 {
		t.Fatalf("bob gave %d face_info events for 2 observations, want 1", n)
	}
	if n := faces("alice", back, r.clk.Mono()); n != 1 {
		t.Fatalf("alice's return gave %d face_info events for 3 observations, want 1", n)
	}
	greets := received[*protocol.GreetSignal](gw, nil)
	var got []string
	for _, g := range greets {
		var p struct{ Kind, Reason string }
		if err := json.Unmarshal(g.M.Param, &p); err != nil {
			t.Fatalf("greet_signal param %s: %v", g.M.Param, err)
		}
		got = append(got, g.M.UID+"/"+p.Kind+"/"+p.Reason)
	}
	if want := []string{"alice/face/new", "bob/face/new", "alice/voiceprint/returned"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("greet_signals %v, want exactly one per appearance: %v", got, want)
	}
	// The gateway greeted each appearance and sent its greet skill: each
	// blink was carried out (on, off) and answered ok.
	for _, res := range received[*protocol.SkillResult](gw, nil) {
		if !res.M.OK {
			t.Fatalf("greet skill result %+v (error %+v), want ok", res.M, res.M.Error)
		}
	}
	ws, _ := r.log.pinWrites(pinLEDEyes, writes0)
	if len(ws) != 6 {
		t.Fatalf("led_eyes writes after 3 greet blinks: %v, want 6 (on, off per greeting)", ws)
	}
	for i, w := range ws {
		if want := []string{"High", "Low"}[i%2]; w.Level != want {
			t.Fatalf("led_eyes write %d is %s, want %s: %v", i, w.Level, want, ws)
		}
	}
	if r.reg.Value("robot_agent_playback_played_samples_total") == 0 {
		t.Fatal("the greeting chime was not played")
	}
}

// TestRobotSkillsDriveGPIO: gateway skills on led_eyes change the
// simulated GPIO output and are answered ok; skills the arbiter refuses
// (unknown skill, pin off the allowlist, bad arguments) are answered with a
// structured error and write nothing to any pin.
func TestRobotSkillsDriveGPIO(t *testing.T) {
	r := startRobot(t, rigOptions{})
	s := r.session(t)
	led := r.pin(pinLEDEyes)
	if led.Level() != gpio.Low {
		t.Fatal("led_eyes is not at its safe level (low) after start")
	}
	_, n0 := r.log.pinWrites("", 0)
	hw0 := led.Writes()

	res := r.skillResult(t, sendSkill(t, s, "gpio.set", `{"pin":"led_eyes","on":true}`), 3*time.Second)
	if !res.OK || string(res.Result) != `{"on":true,"pin":"led_eyes"}` {
		t.Fatalf("gpio.set on: result %+v (error %+v), want ok {on:true, pin:led_eyes}", res, res.Error)
	}
	if led.Level() != gpio.High {
		t.Fatal("gpio.set on: led_eyes pin is not high")
	}
	res = r.skillResult(t, sendSkill(t, s, "gpio.set", `{"pin":"led_eyes","on":false}`), 3*time.Second)
	if !res.OK || led.Level() != gpio.Low {
		t.Fatalf("gpio.set off: result %+v, pin %v, want ok and low", res, led.Level())
	}
	res = r.skillResult(t, sendSkill(t, s, "gpio.blink", `{"pin":"led_eyes","times":2,"period_ms":100}`), 3*time.Second)
	if !res.OK || string(res.Result) != `{"pin":"led_eyes","times":2}` {
		t.Fatalf("gpio.blink: result %+v (error %+v), want ok {pin, times:2}", res, res.Error)
	}
	ws, n1 := r.log.pinWrites("", n0)
	var levels []string
	for _, w := range ws {
		if w.Pin != pinLEDEyes {
			t.Fatalf("write to pin %s, want only %s", w.Pin, pinLEDEyes)
		}
		levels = append(levels, w.Level)
	}
	if want := "[High Low High Low High Low]"; fmt.Sprint(levels) != want {
		t.Fatalf("led_eyes write log %v, want %s (set on, set off, blink twice)", levels, want)
	}
	if d := ws[5].At - ws[2].At; d < 3*50*time.Millisecond {
		t.Fatalf("blink toggled over %v, want >= 3 half periods (150 ms)", d)
	}
	if n := led.Writes() - hw0; n != 6 {
		t.Fatalf("pin fake counted %d writes, want 6", n)
	}

	hw1 := led.Writes()
	for _, c := range []struct {
		skill, args, code, names string
	}{
		{"gpio.pwm", `{"pin":"led_eyes","duty":0.5}`, protocol.CodeUnknownSkill, `"gpio.pwm"`},
		{"gpio.set", `{"pin":"motor_en","on":true}`, protocol.CodeBadArgument, `"motor_en"`},
		{"gpio.set", `{"pin":"GPIO17","on":true}`, protocol.CodeBadArgument, `"GPIO17"`},
		{"gpio.set", `{"pin":"led_eyes","on":"yes"}`, protocol.CodeBadArgument, `"on"`},
		{"gpio.blink", `{"pin":"led_eyes","times":0,"period_ms":100}`, protocol.CodeBadArgument, `"times" is 0`},
		{"gpio.blink", `{"pin":"led_eyes","times":2,"period_ms":100,"colour":"red"}`, protocol.CodeBadArgument, `"colour"`},
		{"gpio.blink", `[1,2]`, protocol.CodeBadArgument, `"args"`},
	} {
		res := r.skillResult(t, sendSkill(t, s, c.skill, c.args), 3*time.Second)
		if res.OK || res.Error == nil || res.Error.Code != c.code || !strings.Contains(res.Error.Msg, c.names) || res.Result != nil {
			t.Fatalf("%s %s: result %+v error %+v, want ok=false, code %s, a message naming %s", c.skill, c.args, res, res.Error, c.code, c.names)
		}
		t.Logf("%s %s → %s: %s", c.skill, c.args, res.Error.Code, res.Error.Msg)
	}
	time.Sleep(100 * time.Millisecond)
	if ws, _ := r.log.pinWrites("", n1); len(ws) != 0 || led.Writes() != hw1 || led.Level() != gpio.Low {
		t.Fatalf("refused skills wrote to pins: %v (fake counted %d), level %v", ws, led.Writes()-hw1, led.Level())
	}
	if n := len(received[*protocol.SkillResult](r.a.gw, nil)); n != 10 {
		t.Fatalf("gateway got %d skill_results for 10 skills, want exactly one each", n)
	}
	r.drained(t)
}

// TestRobotVolumeSkill: the gateway's audio.volume sets the robot's own
// volume (the level the speaker chain applies, and its gauge); a level out
// of range is refused with the field and value named and changes nothing.
func TestRobotVolumeSkill(t *testing.T) {
	r := startRobot(t, rigOptions{})
	// Above the echo canceller's tap (with a canceller built in): walking
	// down from the volume reaches it.
	t.Logf("echo canceller tap: %v", r.a.aecTap != nil)
	if r.a.aecTap != nil {
		found := false
		for k := hw.AudioSink(r.a.volume); k != nil && !found; {
			u, ok := k.(interface{ Unwrap() hw.AudioSink })
			if !ok {
				break
			}
			k = u.Unwrap()
			found = k == hw.AudioSink(r.a.aecTap)
		}
		if !found {
			t.Fatal("the volume is not above the echo canceller's reference tap")
		}
	}
	s := r.session(t)
	res := r.skillResult(t, sendSkill(t, s, "audio.volume", `{"level_db":-20}`), 3*time.Second)
	if !res.OK || string(res.Result) != `{"level_db":-20}` {
		t.Fatalf("audio.volume -20: result %+v (error %+v), want ok {level_db:-20}", res, res.Error)
	}
	if got := r.a.volume.DB(); got != -20 {
		t.Fatalf("volume %g dB after the skill, want -20", got)
	}
	if v := r.reg.Value(volume.MetricLevel); v != -20 {
		t.Fatalf("%s = %v, want -20", volume.MetricLevel, v)
	}
	res = r.skillResult(t, sendSkill(t, s, "audio.volume", `{"change_db":8}`), 3*time.Second)
	if !res.OK || string(res.Result) != `{"level_db":-12}` {
		t.Fatalf("audio.volume +8: result %+v (error %+v), want ok {level_db:-12}", res, res.Error)
	}
	res = r.skillResult(t, sendSkill(t, s, "audio.volume", `{"level_db":6}`), 3*time.Second)
	if res.OK || res.Error == nil || res.Error.Code != protocol.CodeBadArgument || !strings.Contains(res.Error.Msg, `"level_db" is 6`) {
		t.Fatalf("audio.volume +6: result %+v error %+v, want bad_argument naming level_db 6", res, res.Error)
	}
	if got := r.a.volume.DB(); got != -12 {
		t.Fatalf("volume %g dB after a refused call, want -12 kept", got)
	}
	r.drained(t)
}

// TestRobotFunctionCallDecision: a head-button press raises button_press;
// the gateway's arbiter decision comes back over the WebSocket and the
// robot's default handler (the simulator's: blink led_eyes twice) runs
// only when the call is delegated.
func TestRobotFunctionCallDecision(t *testing.T) {
	for _, decision := range []string{protocol.DecisionDelegate, protocol.DecisionOverride, protocol.DecisionIllegal} {
		t.Run(decision, func(t *testing.T) {
			r := startRobot(t, rigOptions{gw: gateway.Config{Decision: decision}})
			r.session(t)
			// The GPIO module reads the line's level when it starts: a
			// press before that is its initial state, not a press (seen
			// under qemu-arm, where the module starts late).
			waitUntil(t, 3*time.Second, "initial gpio.button_head state", func() bool {
				return len(received(r.a.gw, stateNamed("gpio.button_head"))) == 1
			})
			_, n0 := r.log.pinWrites("", 0)
			bounce(r.pin(pinButtonHead), gpio.Low, gpio.High, gpio.Low)
			var fc *protocol.FunctionCall
			waitUntil(t, 3*time.Second, "function_call at the gateway", func() bool {
				got := received[*protocol.FunctionCall](r.a.gw, nil)
				if len(got) > 0 {
					fc = got[0].M
				}
				return fc != nil
			})
			if i := fc.FunctionCall; i.Source != "gpio" || i.Type != "button_press" || i.Value != "button_head" || i.Policy != "arbitrate" || !strings.HasPrefix(fc.EventID, r.a.client.BootID()+"-") {
				t.Fatalf("function_call %+v %+v: want gpio/button_press/button_head, policy arbitrate, a <boot_id>-<n> event_id (§3.3)", fc.Meta, i)
			}
			counter := map[string]string{
				protocol.DecisionDelegate: "robot_agent_function_calls_delegated_total",
				protocol.DecisionOverride: "robot_agent_function_calls_overridden_total",
				protocol.DecisionIllegal:  "robot_agent_function_calls_illegal_total",
			}[decision]
			waitUntil(t, 3*time.Second, "the robot acted on the "+decision+" decision", func() bool { return r.reg.Value(counter) == 1 })
			if decision == protocol.DecisionDelegate {
				waitUntil(t, 3*time.Second, "default handler blinking led_eyes", func() bool {
					ws, _ := r.log.pinWrites(pinLEDEyes, n0)
					return len(ws) >= 4
				})
			} else {
				time.Sleep(500 * time.Millisecond) // the handler would have written at once
			}
			ws, _ := r.log.pinWrites("", n0)
			var levels []string
			for _, w := range ws {
				levels = append(levels, w.Pin+"="+w.Level)
			}
			want := "[]"
			if decision == protocol.DecisionDelegate {
				want = "[GPIO17=High GPIO17=Low GPIO17=High GPIO17=Low]"
			}
			if fmt.Sprint(levels) != want {
				t.Fatalf("decision %s: pin writes %v, want %s", decision, levels, want)
			}
			if p := r.a.robot.arb.Pending(); p != 0 {
				t.Fatalf("%d function calls still pending after the decision", p)
			}
			if n := r.reg.Value("robot_agent_function_calls_timeouts_total"); n != 0 {
				t.Fatalf("%d function calls timed out", n)
			}
			r.drained(t)
		})
	}
}

// linkGate is a link observer that holds the robot's uplink down after a
// drop until the test opens it (as an unreachable gateway would), so
// events can be produced while the link is known to be down. It runs after
// the arbiter's dead-man.
type linkGate struct {
	mu      sync.Mutex
	hold    chan struct{} // closed: let the uplink reconnect
	downs   chan time.Duration
	clk     clock.Clock
	holding bool
}

func newLinkGate(clk clock.Clock) *linkGate {
	return &linkGate{clk: clk, downs: make(chan time.Duration, 8)}
}

// arm makes the next link-down wait until open.
func (g *linkGate) arm() {
	g.mu.Lock()
	g.hold = make(chan struct{})
	g.mu.Unlock()
}

func (g *linkGate) open() {
	g.mu.Lock()
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
	g.mu.Unlock()
}

func (g *linkGate) LinkChanged(up bool, _ string) {
	if up {
		return
	}
	g.mu.Lock()
	hold := g.hold
	g.mu.Unlock()
	g.downs <- g.clk.Mono()
	if hold != nil {
		select {
		case <-hold:
		case <-time.After(5 * time.Second):
		}
	}
}

// TestRobotDeadManThroughRealLink: while led_eyes is on (gpio.set, then a
// running blink), the gateway drops the session; the output returns to its
// safe level promptly, stays there after the agent reconnects until a
// fresh command, and a cancelled blink never writes again. Nothing on the
// control lane is lost across the reconnects: the outbox drains and every
// state event the robot emitted reaches the gateway.
func TestRobotDeadManThroughRealLink(t *testing.T) {
	clk := clock.NewReal()
	gate := newLinkGate(clk)
	// modules.SimConfig's GPIO and skills, plus the IMU publishing every
	// key at 20 Hz, so control events are always in flight when the link
	// drops.
	r := startRobot(t, rigOptions{observer: gate, clk: clk, yaml: `
state:
  gpio:
    enabled: true
    inputs:
      button_head: {pin: GPIO27, function_call: button_press}
      bump_front: {pin: GPIO22, debounce: 10ms}
    outputs:
      led_eyes: GPIO17
  imu: {enabled: true, publish_hz: 20, heartbeat: 1ms}
skills:
  allow: [gpio.set, gpio.blink]
  pins: [led_eyes]
`})
	t.Cleanup(gate.open) // runs before the agent stops: never leave the uplink held
	led := r.pin(pinLEDEyes)
	bump := r.pin(pinBumpFront)
	s1 := r.session(t)

	// Drop the link with the output on; hold it down while the bump
	// sensor is pressed and released (state events emitted offline).
	dropAndPress := func(s *gateway.Session, blinking bool) (dropAt, downAt, safeAt time.Duration) {
		t.Helper()
		_, n := r.log.pinWrites("", 0)
		states0 := r.reg.Value("robot_agent_state_events_total")
		gate.arm()
		dropAt = r.clk.Mono()
		s.Close("test: link dropped")
		select {
		case downAt = <-gate.downs:
		case <-time.After(3 * time.Second):
			t.Fatal("robot did not notice the dropped link within 3 s")
		}
		// The dead-man acted before the observers after it ran: its write
		// (led_eyes low) is the last one, after the drop.
		if led.Level() != gpio.Low {
			t.Fatal("led_eyes still high when the robot saw the link down")
		}
		ws, _ := r.log.pinWrites("", n)
		if len(ws) == 0 || ws[len(ws)-1].Pin != pinLEDEyes || ws[len(ws)-1].Level != "Low" || ws[len(ws)-1].At < dropAt {
			t.Fatalf("pin writes on link loss %v, want led_eyes low last, after the drop at %v", ws, dropAt)
		}
		if !blinking && len(ws) != 1 {
			t.Fatalf("pin writes on link loss %v, want exactly one (led_eyes low)", ws)
		}
		safeAt = ws[len(ws)-1].At
		if r.a.client.Up() {
			t.Fatal("link reported up while held down")
		}
		bounce(bump, gpio.Low, gpio.High, gpio.Low) // press
		time.Sleep(50 * time.Millisecond)
		bounce(bump, gpio.High) // release
		waitUntil(t, 2*time.Second, "bump events emitted while offline", func() bool {
			return r.reg.Value("robot_agent_state_events_total") >= states0+2
		})
		gate.open()
		return dropAt, downAt, safeAt
	}
	// After a reconnect, the output stays safe: no writes for a while.
	staysOff := func(what string) {
		t.Helper()
		_, n := r.log.pinWrites("", 0)
		time.Sleep(400 * time.Millisecond)
		if ws, _ := r.log.pinWrites("", n); len(ws) != 0 || led.Level() != gpio.Low {
			t.Fatalf("%s: pin writes %v after reconnecting, level %v: want none, low", what, ws, led.Level())
		}
	}

	// 1. gpio.set on, drop.
	if res := r.skillResult(t, sendSkill(t, s1, "gpio.set", `{"pin":"led_eyes","on":true}`), 3*time.Second); !res.OK || led.Level() != gpio.High {
		t.Fatalf("gpio.set on: %+v, level %v", res, led.Level())
	}
	drop, down, safe := dropAndPress(s1, false)
	t.Logf("set on → drop: robot saw the link down %v after Session.Close, output safe %v after it", down-drop, safe-drop)
	if safe-drop > time.Second {
		t.Fatalf("output returned to safe %v after the drop, want promptly (< 1 s)", safe-drop)
	}
	s2 := r.session(t)
	staysOff("after set on")
	if res := r.skillResult(t, sendSkill(t, s2, "gpio.set", `{"pin":"led_eyes","on":true}`), 3*time.Second); !res.OK || led.Level() != gpio.High {
		t.Fatalf("fresh gpio.set on after reconnect: %+v, level %v", res, led.Level())
	}
	if res := r.skillResult(t, sendSkill(t, s2, "gpio.set", `{"pin":"led_eyes","on":false}`), 3*time.Second); !res.OK {
		t.Fatalf("gpio.set off: %+v", res)
	}

	// 2. A long blink running, drop.
	_, n := r.log.pinWrites("", 0)
	blinkRef := sendSkill(t, s2, "gpio.blink", `{"pin":"led_eyes","times":20,"period_ms":200}`)
	waitUntil(t, 3*time.Second, "blink running", func() bool {
		ws, _ := r.log.pinWrites(pinLEDEyes, n)
		return len(ws) >= 2
	})
	drop, down, safe = dropAndPress(s2, true)
	t.Logf("blink → drop: robot saw the link down %v after Session.Close, output safe %v after it", down-drop, safe-drop)
	if safe-drop > time.Second {
		t.Fatalf("output returned to safe %v after the drop, want promptly (< 1 s)", safe-drop)
	}
	s3 := r.session(t)
	staysOff("after a cancelled blink")
	// The blink's one skill_result was emitted while offline and delivered
	// on the new session.
	res := r.skillResult(t, blinkRef, 3*time.Second)
	if res.OK || res.Error == nil || res.Error.Code != protocol.CodeUnavailable || !strings.Contains(res.Error.Msg, "dead-man") {
		t.Fatalf("cancelled blink result %+v error %+v, want unavailable naming the dead-man", res, res.Error)
	}
	if res := r.skillResult(t, sendSkill(t, s3, "gpio.set", `{"pin":"led_eyes","on":true}`), 3*time.Second); !res.OK || led.Level() != gpio.High {
		t.Fatalf("fresh gpio.set on after the second reconnect: %+v, level %v", res, led.Level())
	}
	r.drained(t)
	r.stop(t)
	if led.Level() != gpio.Low {
		t.Fatal("led_eyes not back at its safe level after the agent stopped")
	}

	// Nothing from the control lane was lost. The bump events emitted
	// while offline arrived on the following sessions.
	var bumps []gwMsg[*protocol.State]
	seen := map[string]bool{}
	for _, b := range received(r.a.gw, stateNamed("gpio.bump_front")) {
		if !seen[b.M.EventID] { // first receipt of each (resends are allowed)
			seen[b.M.EventID] = true
			bumps = append(bumps, b)
		}
	}
	var sessions []string
	for _, b := range bumps {
		sessions = append(sessions, b.Session+":"+string(b.M.StateValue))
	}
	if len(bumps) != 5 || bumps[1].Session != s2.ID || bumps[3].Session != s3.ID {
		t.Fatalf("gpio.bump_front events %v: want the initial one on %s, 2 on %s, 2 on %s", sessions, s1.ID, s2.ID, s3.ID)
	}
	// Every state event the robot handed to the uplink reached the gateway
	// at least once (the gateway's ids are a subset of the robot's, so
	// equal counts mean equal sets).
	ids := map[string]bool{}
	for _, st := range received[*protocol.State](r.a.gw, nil) {
		ids[st.M.EventID] = true
	}
	emitted := r.reg.Value("robot_agent_state_events_total")
	if int64(len(ids)) != emitted || r.reg.Value("robot_agent_state_emit_errors_total") != 0 {
		t.Fatalf("robot emitted %d state events (%d refused), gateway received %d distinct event_ids", emitted, r.reg.Value("robot_agent_state_emit_errors_total"), len(ids))
	}
	// The outbox numbers the events it names: the gateway saw every number
	// from 1 to the last, on one session or another.
	seqs := outboxSeqs(t, r.a.gw)
	for i, n := range seqs {
		if n != uint64(i+1) {
			t.Fatalf("outbox event numbers at the gateway: %d at position %d, want 1..%d without gaps", n, i, len(seqs))
		}
	}
	t.Logf("%d state events, %d outbox-numbered control events, %d resent after reconnects, all at the gateway", emitted, len(seqs), r.reg.Value("robot_agent_control_resent_total"))
}

// outboxSeqs returns the sorted distinct numbers n of the event_ids
// "<prefix>-<n>" the uplink outbox assigned, as received by the gateway.
func outboxSeqs(t *testing.T, gw *gateway.Server) []uint64 {
	t.Helper()
	prefix := ""
	seen := map[uint64]bool{}
	for _, ev := range gw.Events() {
		if ev.Msg == nil {
			continue
		}
		id := ev.Msg.Envelope().EventID
		if id == "" {
			continue
		}
		if _, isAck := ev.Msg.(*protocol.Ack); isAck {
			continue
		}
		i := strings.LastIndexByte(id, '-')
		n, err := strconv.ParseUint(id[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("event_id %q is not <prefix>-<n>", id)
		}
		if prefix == "" {
			prefix = id[:i]
		} else if id[:i] != prefix {
			t.Fatalf("event_id %q: prefix differs from %q", id, prefix)
		}
		seen[n] = true
	}
	out := make([]uint64, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
