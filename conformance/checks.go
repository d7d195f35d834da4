package conformance

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/protocol"
)

var checks = []check{
	{"2.3/no-authorization", "upgrade without Authorization is refused with HTTP 401", chkNoAuth},
	{"2.3/bad-token", "upgrade with a token never issued is refused with HTTP 403", chkBadToken},
	{"2.3/no-device-id", "upgrade without X-Robot-Device-Id is refused with HTTP 401", chkNoDevice},
	{"2.3/subprotocol-required", "upgrade without robot-agent.v1 is refused with HTTP 400", chkNoSubprotocol},
	{"2.3/subprotocol-echoed", "HTTP 101 echoes Sec-WebSocket-Protocol: robot-agent.v1", chkEcho},
	{"3.1/hello", "gateway hello comes first, within 5 s, and is valid", chkHello},
	{"3.9/negotiation", "hello choices come from the robot's offer", chkNegotiation},
	{"3.1/version-mismatch", "robot hello protocol 2: error version_mismatch, close 1002", chkVersionMismatch},
	{"3.1/device-mismatch", "hello device_id differs from the header: error unauthorized, close 1008", chkDeviceMismatch},
	{"3.1/not-hello-first", "a message before hello: error, close 1002", chkNotHelloFirst},
	{"3.1/bad-audio", "hello audio_up 8 kHz: error unsupported, close 1002", chkBadAudio},
	{"3.1/hello-timeout", "no robot hello: close 1008 after 5 s", chkHelloTimeout},
	{"3.6/pong", "a robot ping is answered with a pong", chkPong},
	{"5.3/ack-state", "state is acked exactly once", reliable(protocol.TypeState)},
	{"5.3/ack-face-info", "face_info is acked exactly once", reliable(protocol.TypeFaceInfo)},
	{"5.3/ack-greet-signal", "greet_signal is acked exactly once", reliable(protocol.TypeGreetSignal)},
	{"7.4/function-call-arbiter", "function_call gets one ack and exactly one function_call_arbiter", chkFunctionCall},
	{"5.3/duplicate-acked", "an event re-sent with the same event_id is acked again", chkDuplicate},
	{"10/unknown-fields", "unknown fields are ignored", chkUnknownFields},
	{"4.5/utterance", "a mic utterance (start, continue, end) is accepted", chkUtterance},
	{"7.1/responses", "response ids increase, audio is valid and not interleaved, final progress is acked", chkResponses},
	{"9.1/bad-json", "invalid JSON: error bad_message, the session continues", chkBadJSON},
	{"9.1/unknown-type", "unknown type: error unknown_type with ref, the session continues", chkUnknownType},
	{"9.1/missing-type", "event_id but no type: error bad_message with ref (v1.1)", chkMissingType},
	{"9.1/no-error-for-error", "no error in reply to an error or an ack", chkNoErrorForError},
	{"4.3/short-frame", "binary frame shorter than 24 bytes: bad_frame", frame(shortFrame, protocol.CodeBadFrame)},
	{"4.3/unknown-kind", "unknown kind: unsupported", frame(unknownKind, protocol.CodeUnsupported)},
	{"4.3/bad-version", "header version 2: unsupported", frame(badVersion, protocol.CodeUnsupported)},
	{"4.3/bad-flag", "mic flag 7: bad_frame", frame(badFlag, protocol.CodeBadFrame)},
	{"4.3/length-mismatch", "length field ≠ payload: bad_frame", frame(lengthMismatch, protocol.CodeBadFrame)},
	{"4.3/wrong-direction", "TTS frame from the robot: unsupported", frame(ttsFromRobot, protocol.CodeUnsupported, protocol.CodeBadFrame)},
	{"4.3/too-large", "mic frame over 32 024 bytes: too_large", frame(bigMic, protocol.CodeTooLarge)},
	{"5.1/control-too-large", "control message over 65 536 bytes: too_large", chkControlTooLarge},
	{"2.4/read-limit", "message over 4 194 328 bytes: close 1009", chkReadLimit},
	{"3.5/resume", "reconnect with resume_session: same id and resumed, or a new id", chkResume},
	{"2.5/close-echo", "robot close 1000 is answered with a close frame", chkCloseEcho},
	{"3.6/keepalive-timeout", "a silent robot is dropped after timeout_ms, not before", chkKeepaliveTimeout},
	{"5.1/gateway-messages-valid", "every gateway message of the run decoded, reliable ones had an event_id, none needed an unlisted capability", chkAudit},
}

// ---- helpers ----

// session connects (valid credentials, hello exchanged).
func (r *runner) session(ctx context.Context) (*robotConn, string) {
	c, err := r.connect(ctx, "")
	if err != nil {
		return nil, "could not open a session: " + err.Error()
	}
	r.lastSession = c.hello.SessionID
	r.helloMS = c.hello.Keepalive
	return c, ""
}

// end closes c politely and audits what it received.
func (r *runner) end(c *robotConn) {
	if c == nil {
		return
	}
	c.closeWith(protocol.CloseNormal, "conformance check done")
	c.waitClosed(time.Second)
	c.abort()
	r.audit(c)
}

// audit records gateway messages that break the rules wherever they occur.
func (r *runner) audit(c *robotConn) {
	for _, x := range c.all(0, func(rx) bool { return true }) {
		if x.text {
			r.audited.msgs++
			if x.msgErr != nil {
				r.audited.problems = append(r.audited.problems, fmt.Sprintf("undecodable %.80q: %v", x.data, x.msgErr))
				continue
			}
			switch m := x.msg.(type) {
			case *protocol.Skill, *protocol.Arbiter, *protocol.Interrupt:
				if m.Envelope().EventID == "" {
					r.audited.problems = append(r.audited.problems, fmt.Sprintf("%s without event_id (§5.3 MUST)", m.Envelope().Type))
				}
			case *protocol.Error:
				if m.Code == "" {
					r.audited.problems = append(r.audited.problems, "error without code")
				}
			case *protocol.KeyframeRequest:
				// The kit robot does not list video_h264 (§6.1).
				r.audited.problems = append(r.audited.problems, "keyframe_request to a robot without video_h264 (§6.1 MUST NOT)")
			}
		} else {
			r.audited.frames++
			if x.frameErr != nil {
				r.audited.problems = append(r.audited.problems, fmt.Sprintf("bad binary frame: %v", x.frameErr))
			} else if x.hdr.Kind != protocol.KindTTSAudio {
				r.audited.problems = append(r.audited.problems, fmt.Sprintf("binary kind %d sent to a robot", x.hdr.Kind))
			}
		}
	}
}

func chkAudit(ctx context.Context, r *runner) (Status, string) {
	if len(r.audited.problems) > 0 {
		return Fail, fmt.Sprintf("%d problem(s): %s", len(r.audited.problems), strings.Join(first(r.audited.problems, 3), "; "))
	}
	return Pass, fmt.Sprintf("%d text messages and %d binary frames received, all valid", r.audited.msgs, r.audited.frames)
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

func statusOf(resp *http.Response, err error) string {
	if resp != nil {
		return fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	if err != nil {
		return err.Error()
	}
	return "HTTP 101 (accepted)"
}

func wantHTTP(resp *http.Response, err error, want int) (Status, string) {
	got := statusOf(resp, err)
	if resp != nil && resp.StatusCode == want {
		return Pass, got
	}
	return Fail, fmt.Sprintf("got %s, want HTTP %d", got, want)
}

// ---- §2.3 upgrade ----

func chkNoAuth(ctx context.Context, r *runner) (Status, string) {
	ws, resp, err := r.dial(ctx, dialOpts{noAuth: true, device: r.cfg.DeviceID})
	if ws != nil {
		ws.Close()
	}
	return wantHTTP(resp, err, http.StatusUnauthorized)
}

func chkBadToken(ctx context.Context, r *runner) (Status, string) {
	ws, resp, err := r.dial(ctx, dialOpts{token: "conformance-never-issued-" + r.bootID, device: r.cfg.DeviceID})
	if ws != nil {
		ws.Close()
	}
	return wantHTTP(resp, err, http.StatusForbidden)
}

func chkNoDevice(ctx context.Context, r *runner) (Status, string) {
	ws, resp, err := r.dial(ctx, dialOpts{token: r.cfg.Token})
	if ws != nil {
		ws.Close()
	}
	return wantHTTP(resp, err, http.StatusUnauthorized)
}

func chkNoSubprotocol(ctx context.Context, r *runner) (Status, string) {
	ws, resp, err := r.dial(ctx, dialOpts{token: r.cfg.Token, device: r.cfg.DeviceID, subprotocols: []string{"robot-agent.v999"}})
	if ws != nil {
		ws.Close()
	}
	return wantHTTP(resp, err, http.StatusBadRequest)
}

func chkEcho(ctx context.Context, r *runner) (Status, string) {
	ws, resp, err := r.dial(ctx, dialOpts{token: r.cfg.Token, device: r.cfg.DeviceID})
	if err != nil {
		return Fail, "upgrade failed: " + statusOf(resp, err)
	}
	defer ws.Close()
	if got := ws.Subprotocol(); got != protocol.Subprotocol {
		return Fail, fmt.Sprintf("101 with Sec-WebSocket-Protocol %q, want %q", got, protocol.Subprotocol)
	}
	return Pass, "101, Sec-WebSocket-Protocol: " + protocol.Subprotocol
}

// ---- §3.1 handshake ----

func chkHello(ctx context.Context, r *runner) (Status, string) {
	start := time.Now()
	c, err := r.connect(ctx, "")
	if err != nil {
		return Fail, err.Error()
	}
	defer r.end(c)
	took := time.Since(start)
	h := c.hello
	var probs []string
	if h.Protocol != protocol.Version {
		probs = append(probs, fmt.Sprintf("protocol %d", h.Protocol))
	}
	if h.SessionID == "" || len(h.SessionID) > 128 {
		probs = append(probs, fmt.Sprintf("session_id %q (want 1..128 bytes)", h.SessionID))
	}
	if len(probs) > 0 {
		return Fail, strings.Join(probs, "; ")
	}
	return Pass, fmt.Sprintf("hello after %v: session_id %q, protocol_minor %d, keepalive %d/%d ms, capabilities %v",
		took.Round(time.Millisecond), h.SessionID, h.Minor, h.Keepalive.IntervalMS, h.Keepalive.TimeoutMS, h.Capabilities)
}

func chkNegotiation(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	neg, err := protocol.Negotiate(c.robot, c.hello, protocol.Keepalive{IntervalMS: 5000, TimeoutMS: 15000})
	if err != nil {
		return Fail, err.Error()
	}
	if neg.Keepalive.TimeoutMS < neg.Keepalive.IntervalMS {
		return Fail, fmt.Sprintf("keepalive timeout_ms %d shorter than interval_ms %d", neg.Keepalive.TimeoutMS, neg.Keepalive.IntervalMS)
	}
	src := "v1 fields"
	if c.hello.Audio != nil {
		src = "audio choice"
	}
	return Pass, fmt.Sprintf("session at v1.%d, audio up %s down %s (%s), keepalive %d/%d ms", neg.Minor, neg.AudioUp, neg.AudioDown, src, neg.Keepalive.IntervalMS, neg.Keepalive.TimeoutMS)
}

// rawConn dials with valid credentials and starts the reader without any
// hello.
func (r *runner) rawConn(ctx context.Context) (*robotConn, string) {
	ws, resp, err := r.dial(ctx, dialOpts{token: r.cfg.Token, device: r.cfg.DeviceID})
	if err != nil {
		return nil, "upgrade failed: " + statusOf(resp, err)
	}
	c := &robotConn{ws: ws, start: time.Now(), changed: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, ""
}

// badHello sends first, then expects an error with code wantCode and a
// close with wantClose.
func (r *runner) badHello(ctx context.Context, first []byte, wantCode string, wantClose int) (Status, string) {
	c, msg := r.rawConn(ctx)
	if c == nil {
		return Fail, msg
	}
	defer c.abort()
	if err := c.send(websocket.TextMessage, first); err != nil {
		return Fail, "send: " + err.Error()
	}
	code, err, ok := c.waitClosed(r.cfg.Wait + 2*time.Second)
	var errs []string
	for _, x := range c.all(0, isError) {
		e := x.msg.(*protocol.Error)
		errs = append(errs, e.Code)
	}
	hellos := c.all(0, func(x rx) bool { _, ok := x.msg.(*protocol.GatewayHello); return ok })
	ev := fmt.Sprintf("errors %v, close %d (%v)", errs, code, err)
	switch {
	case !ok:
		return Fail, fmt.Sprintf("connection still open after %v; errors %v", r.cfg.Wait+2*time.Second, errs)
	case len(hellos) > 0:
		return Fail, "gateway answered a bad hello with its hello; " + ev
	case !slices.Contains(errs, wantCode):
		return Fail, fmt.Sprintf("want error %s; %s", wantCode, ev)
	case code != wantClose:
		return Fail, fmt.Sprintf("want close %d; %s", wantClose, ev)
	}
	return Pass, ev
}

func helloJSON(r *runner, mod func(*protocol.RobotHello)) []byte {
	h := r.robotHello("")
	mod(h)
	b, _ := json.Marshal(h)
	return b
}

func chkVersionMismatch(ctx context.Context, r *runner) (Status, string) {
	return r.badHello(ctx, helloJSON(r, func(h *protocol.RobotHello) { h.Protocol = 2 }), protocol.CodeVersionMismatch, protocol.CloseProtocolError)
}

func chkDeviceMismatch(ctx context.Context, r *runner) (Status, string) {
	return r.badHello(ctx, helloJSON(r, func(h *protocol.RobotHello) { h.DeviceID = r.cfg.DeviceID + "-other" }), protocol.CodeUnauthorized, protocol.ClosePolicyViolation)
}

func chkNotHelloFirst(ctx context.Context, r *runner) (Status, string) {
	st, _ := protocol.Marshal(&protocol.State{Meta: protocol.Meta{EventID: r.nextID(), TS: r.mono()}, StateName: "pose", StateValue: json.RawMessage(`"standing"`)})
	return r.badHello(ctx, st, protocol.CodeBadMessage, protocol.CloseProtocolError)
}

func chkBadAudio(ctx context.Context, r *runner) (Status, string) {
	return r.badHello(ctx, helloJSON(r, func(h *protocol.RobotHello) {
		h.AudioUp.SampleRate = 8000
		h.Audio = nil
	}), protocol.CodeUnsupported, protocol.CloseProtocolError)
}

func chkHelloTimeout(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.rawConn(ctx)
	if c == nil {
		return Fail, msg
	}
	defer c.abort()
	limit := time.Duration(protocol.HelloTimeoutMS) * time.Millisecond
	code, err, ok := c.waitClosed(limit + 2*time.Second)
	took := time.Since(c.start).Round(10 * time.Millisecond)
	switch {
	case !ok:
		return Fail, fmt.Sprintf("connection still open %v after the upgrade without a robot hello", limit+2*time.Second)
	case code != protocol.ClosePolicyViolation:
		return Fail, fmt.Sprintf("closed after %v with %d (%v), want close 1008", took, code, err)
	case took < limit-500*time.Millisecond:
		return Fail, fmt.Sprintf("closed after %v, before the 5 s hello timeout", took)
	}
	return Pass, fmt.Sprintf("close 1008 after %v", took)
}

// ---- §3.6 keepalive ----

func chkPong(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	start := time.Now()
	if err := c.ping(); err != nil {
		return Fail, "ping: " + err.Error()
	}
	deadline := time.Now().Add(r.cfg.Wait)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		n := c.pongsIn
		c.mu.Unlock()
		if n > 0 {
			return Pass, fmt.Sprintf("pong after %v", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return Fail, fmt.Sprintf("no pong within %v", r.cfg.Wait)
}

func chkKeepaliveTimeout(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer c.abort()
	c.mu.Lock()
	c.silent = true // no pongs either: nothing at all from the robot
	c.mu.Unlock()
	ka := c.hello.Keepalive
	if ka.TimeoutMS <= 0 {
		ka.TimeoutMS = 15000
	}
	timeout := time.Duration(ka.TimeoutMS) * time.Millisecond
	_, err, ok := c.waitClosed(timeout + 3*time.Second)
	took := time.Since(c.start).Round(10 * time.Millisecond)
	switch {
	case !ok:
		return Fail, fmt.Sprintf("silent robot still connected %v after hello (timeout_ms %d)", took, ka.TimeoutMS)
	case took < timeout-timeout/10:
		return Fail, fmt.Sprintf("dropped after %v, before timeout_ms %d (%v)", took, ka.TimeoutMS, err)
	}
	return Pass, fmt.Sprintf("dropped after %v of silence (timeout_ms %d): %v", took, ka.TimeoutMS, err)
}

// ---- §5.3 reliable messages ----

func robotEvent(r *runner, typ string) protocol.Message {
	meta := protocol.Meta{Type: typ, EventID: r.nextID(), TS: r.mono()}
	switch typ {
	case protocol.TypeFaceInfo:
		return &protocol.FaceInfo{Meta: meta, Identities: []protocol.Identity{{UID: "conformance-person", Kind: "face", Confidence: 0.9}}, Param: json.RawMessage(`{"bbox":[1,2,3,4]}`)}
	case protocol.TypeGreetSignal:
		return &protocol.GreetSignal{Meta: meta, UID: "conformance-person", Param: json.RawMessage(`{"distance_m":1.2}`)}
	}
	return &protocol.State{Meta: meta, StateName: "battery", StateValue: json.RawMessage(`{"percent":81,"charging":false}`)}
}

// sendAndSettle sends m and waits for its ack or error; it then waits a
// little longer and counts the answers.
func (r *runner) sendAndSettle(c *robotConn, m protocol.Message) (acks, errs int, took time.Duration, err error) {
	id := m.Envelope().EventID
	from := c.index()
	start := time.Now()
	if err := c.sendMsg(m); err != nil {
		return 0, 0, 0, err
	}
	if _, ok := c.waitFrom(from, r.cfg.Wait, settles(id)); !ok {
		return 0, 0, 0, nil
	}
	took = time.Since(start)
	time.Sleep(200 * time.Millisecond) // a second answer would be a violation
	return len(c.all(from, isAckFor(id))), len(c.all(from, isErrorFor(id))), took, nil
}

func reliable(typ string) func(context.Context, *runner) (Status, string) {
	return func(ctx context.Context, r *runner) (Status, string) {
		c, msg := r.session(ctx)
		if c == nil {
			return Fail, msg
		}
		defer r.end(c)
		m := robotEvent(r, typ)
		acks, errs, took, err := r.sendAndSettle(c, m)
		switch {
		case err != nil:
			return Fail, "send: " + err.Error()
		case acks+errs == 0:
			return Fail, fmt.Sprintf("%s %s: no ack or error(ref) within %v", typ, m.Envelope().EventID, r.cfg.Wait)
		case errs > 0:
			return Fail, fmt.Sprintf("%s %s rejected with an error: %s", typ, m.Envelope().EventID, errText(c, m.Envelope().EventID))
		case acks != 1:
			return Fail, fmt.Sprintf("%s %s answered %d times, want exactly once", typ, m.Envelope().EventID, acks)
		}
		return Pass, fmt.Sprintf("ack for %s after %v", m.Envelope().EventID, took.Round(time.Millisecond))
	}
}

func errText(c *robotConn, id string) string {
	if x := c.all(0, isErrorFor(id)); len(x) > 0 {
		e := x[0].msg.(*protocol.Error)
		return fmt.Sprintf("%s: %s", e.Code, e.Msg)
	}
	return "?"
}

func chkFunctionCall(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	id := r.nextID()
	from := c.index()
	fc := &protocol.FunctionCall{Meta: protocol.Meta{EventID: id, TS: r.mono()},
		FunctionCall: protocol.FunctionCallInfo{Source: "button", Policy: "arbitrate", Type: "motion", Value: "wave", Param: json.RawMessage(`{"hand":"left"}`)}}
	if err := c.sendMsg(fc); err != nil {
		return Fail, "send: " + err.Error()
	}
	isDecision := func(x rx) bool { a, ok := x.msg.(*protocol.Arbiter); return ok && a.Ref == id }
	// The gateway's own deadline is 1.5 s (recommended); the robot waits 3 s.
	d, ok := c.waitFrom(from, max(r.cfg.Wait, 3*time.Second), isDecision)
	time.Sleep(300 * time.Millisecond)
	acks := len(c.all(from, isAckFor(id)))
	decisions := c.all(from, isDecision)
	switch {
	case !ok:
		return Fail, fmt.Sprintf("no function_call_arbiter with ref %s within 3 s (acks: %d)", id, acks)
	case acks != 1:
		return Fail, fmt.Sprintf("function_call acked %d times, want once", acks)
	case len(decisions) != 1:
		return Fail, fmt.Sprintf("%d decisions for one function_call, want exactly one", len(decisions))
	}
	a := d.msg.(*protocol.Arbiter)
	if a.EventID == "" {
		return Fail, "function_call_arbiter without event_id (it is reliable, §5.3)"
	}
	return Pass, fmt.Sprintf("decision %s (event_id %s, param %s) after %v", a.Decision, a.EventID, orNone(a.Param), d.at.Sub(c.start).Round(time.Millisecond))
}

func orNone(p json.RawMessage) string {
	if len(p) == 0 {
		return "none"
	}
	return string(p)
}

func chkDuplicate(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	m := robotEvent(r, protocol.TypeState)
	if a, _, _, _ := r.sendAndSettle(c, m); a != 1 {
		return Fail, fmt.Sprintf("first send acked %d times", a)
	}
	a, e, _, err := r.sendAndSettle(c, m)
	if err != nil || a != 1 || e != 0 {
		return Fail, fmt.Sprintf("re-sent %s: %d acks, %d errors (%v), want one ack", m.Envelope().EventID, a, e, err)
	}
	return Pass, fmt.Sprintf("%s acked again when re-sent", m.Envelope().EventID)
}

func chkUnknownFields(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	id := r.nextID()
	raw := fmt.Sprintf(`{"type":"state","event_id":%q,"ts":%d,"state_name":"pose","state_value":"standing","x_future_field":{"a":[1,2]},"another_one":true}`, id, r.mono())
	from := c.index()
	c.send(websocket.TextMessage, []byte(raw))
	if _, ok := c.waitFrom(from, r.cfg.Wait, settles(id)); !ok {
		return Fail, "state with unknown fields: no answer"
	}
	if e := c.all(from, isErrorFor(id)); len(e) > 0 {
		return Fail, "state with unknown fields rejected: " + errText(c, id)
	}
	return Pass, "state with unknown fields acked (hello also listed an unknown capability)"
}

// ---- §4.5 mic, §7 responses ----

// utterance sends one utterance of a 300 Hz tone with a syllable envelope.
func (r *runner) utterance(c *robotConn, utt uint32, seq *uint32, frames int) error {
	ts := r.mono()
	for i := 0; i < frames; i++ {
		flag := protocol.FlagContinue
		switch i {
		case 0:
			flag = protocol.FlagStart
		case frames - 1:
			flag = protocol.FlagEnd
		}
		pcm := make([]byte, 640)
		if flag != protocol.FlagEnd {
			for j := 0; j < 320; j++ {
				n := float64(i*320 + j)
				env := 0.5 + 0.5*math.Sin(2*math.Pi*4*n/16000)
				v := int16(8000 * env * math.Sin(2*math.Pi*300*n/16000))
				binary.LittleEndian.PutUint16(pcm[2*j:], uint16(v))
			}
		} else {
			pcm = nil
		}
		f := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Flag: flag, Stream: utt, Seq: *seq, Timestamp: ts + int64(i)*20000}, pcm)
		*seq++
		if err := c.send(websocket.BinaryMessage, f); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond) // faster than real time, as after a reconnect
	}
	return nil
}

func chkUtterance(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	from := c.index()
	var seq uint32
	if err := r.utterance(c, 1, &seq, 40); err != nil {
		return Fail, "send: " + err.Error()
	}
	if e, ok := c.waitFrom(from, time.Second, isError); ok {
		return Fail, "gateway rejected a valid utterance: " + describe(e)
	}
	if code, err, closed := c.waitClosed(0); closed {
		return Fail, fmt.Sprintf("connection closed (%d, %v)", code, err)
	}
	return Pass, "40 frames (start, 38 continue, empty end) accepted without error"
}

func chkResponses(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	var seq uint32
	for u := uint32(1); u <= 2; u++ {
		if err := r.utterance(c, u, &seq, 30); err != nil {
			return Fail, "send: " + err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Wait for audio to end (or for nothing to come).
	ended := func(x rx) bool {
		switch m := x.msg.(type) {
		case *protocol.TTSDone:
			return true
		case *protocol.TTS:
			return m.Last
		}
		return !x.text && x.frameErr == nil && x.hdr.Flag == protocol.FlagTTSLast
	}
	if _, ok := c.waitFor(r.cfg.Wait*3, ended); !ok {
		if len(c.all(0, func(x rx) bool { return respID(x) != 0 })) == 0 {
			return Skip, "the gateway sent no response to two utterances; nothing to check"
		}
	}
	time.Sleep(300 * time.Millisecond)
	var order []uint32 // response ids in order of first appearance
	var probs []string
	var cur uint32
	samples := map[uint32]int64{}
	for _, x := range c.all(0, func(x rx) bool { return respID(x) != 0 }) {
		id := respID(x)
		if len(order) == 0 || id > order[len(order)-1] {
			order = append(order, id)
		} else if !slices.Contains(order, id) {
			probs = append(probs, fmt.Sprintf("response id %d after %d (ids must increase)", id, order[len(order)-1]))
		}
		if isAudio(x) {
			if cur != 0 && id != cur && samples[id] > 0 && !finished(c, cur) {
				probs = append(probs, fmt.Sprintf("audio of responses %d and %d interleaved", cur, id))
			}
			cur = id
			samples[id] += audioSamples(x)
		}
	}
	if len(probs) > 0 {
		return Fail, strings.Join(first(probs, 3), "; ")
	}
	// Report the first response with audio as played to the end, as a
	// robot would; the final progress is reliable and must be settled.
	for _, id := range order {
		if samples[id] == 0 {
			continue
		}
		pp := &protocol.PlaybackProgress{Meta: protocol.Meta{EventID: r.nextID(), TS: r.mono()}, ResponseID: id, SamplesPlayed: samples[id], Done: true}
		acks, errs, _, err := r.sendAndSettle(c, pp)
		if err != nil || acks != 1 || errs != 0 {
			return Fail, fmt.Sprintf("final playback_progress for response %d: %d acks, %d errors (%v), want one ack", id, acks, errs, err)
		}
		return Pass, fmt.Sprintf("responses %v; %d samples of audio for response %d; final progress acked", order, samples[id], id)
	}
	return Pass, fmt.Sprintf("responses %v (text only, no audio)", order)
}

func finished(c *robotConn, id uint32) bool {
	return len(c.all(0, func(x rx) bool {
		if respID(x) != id {
			return false
		}
		switch m := x.msg.(type) {
		case *protocol.TTSDone:
			return true
		case *protocol.TTS:
			return m.Last
		case *protocol.Interrupt:
			return true
		}
		return !x.text && x.hdr.Flag == protocol.FlagTTSLast
	})) > 0
}

func respID(x rx) uint32 {
	if !x.text {
		if x.frameErr == nil && x.hdr.Kind == protocol.KindTTSAudio {
			return x.hdr.Stream
		}
		return 0
	}
	switch m := x.msg.(type) {
	case *protocol.Text:
		return m.ResponseID
	case *protocol.TTS:
		return m.ResponseID
	case *protocol.TTSDone:
		return m.ResponseID
	case *protocol.ASR:
		return m.ResponseID
	}
	return 0
}

func isAudio(x rx) bool {
	if !x.text {
		return x.frameErr == nil && x.hdr.Kind == protocol.KindTTSAudio && len(x.data) > protocol.HeaderSize
	}
	t, ok := x.msg.(*protocol.TTS)
	return ok && len(t.Audio) > 0
}

func audioSamples(x rx) int64 {
	if !x.text {
		return int64(len(x.data)-protocol.HeaderSize) / 2
	}
	return int64(len(x.msg.(*protocol.TTS).Audio)) / 2
}

// ---- §9.1 bad control input, §4.3 bad frames ----

// badInput sends data and expects an error with one of codes (and ref, if
// ref != ""); the session must then go on (a state is acked).
func (r *runner) badInput(ctx context.Context, mt int, data []byte, ref string, codes ...string) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	from := c.index()
	if err := c.send(mt, data); err != nil {
		return Fail, "send: " + err.Error()
	}
	x, ok := c.waitFrom(from, r.cfg.Wait, isError)
	if !ok {
		if code, err, closed := c.waitClosed(0); closed {
			return Fail, fmt.Sprintf("no error; the gateway closed the connection (%d, %v) instead of continuing", code, err)
		}
		return Fail, fmt.Sprintf("no error within %v", r.cfg.Wait)
	}
	e := x.msg.(*protocol.Error)
	ev := fmt.Sprintf("error %s (ref %q, msg %q)", e.Code, e.Ref, e.Msg)
	if !slices.Contains(codes, e.Code) {
		return Fail, fmt.Sprintf("%s, want code %s", ev, strings.Join(codes, " or "))
	}
	if ref != "" && e.Ref != ref {
		return Fail, fmt.Sprintf("%s, want ref %q", ev, ref)
	}
	m := robotEvent(r, protocol.TypeState)
	if a, _, _, err := r.sendAndSettle(c, m); a != 1 || err != nil {
		return Fail, ev + "; but the session did not continue (next state not acked)"
	}
	return Pass, ev + "; session continued"
}

func chkBadJSON(ctx context.Context, r *runner) (Status, string) {
	return r.badInput(ctx, websocket.TextMessage, []byte(`{"type":"state","event_id":`), "", protocol.CodeBadMessage)
}

func chkUnknownType(ctx context.Context, r *runner) (Status, string) {
	id := r.nextID()
	return r.badInput(ctx, websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"teleport","event_id":%q,"ts":%d}`, id, r.mono())), id, protocol.CodeUnknownType)
}

func chkMissingType(ctx context.Context, r *runner) (Status, string) {
	id := r.nextID()
	return r.badInput(ctx, websocket.TextMessage, []byte(fmt.Sprintf(`{"event_id":%q,"ts":%d,"state_name":"pose"}`, id, r.mono())), id, protocol.CodeBadMessage)
}

func chkControlTooLarge(ctx context.Context, r *runner) (Status, string) {
	id := r.nextID()
	big := fmt.Sprintf(`{"type":"state","event_id":%q,"ts":%d,"state_name":"blob","state_value":%q}`, id, r.mono(), strings.Repeat("x", protocol.MaxControl))
	return r.badInput(ctx, websocket.TextMessage, []byte(big), "", protocol.CodeTooLarge)
}

func chkNoErrorForError(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer r.end(c)
	from := c.index()
	c.sendMsg(&protocol.Error{Meta: protocol.Meta{TS: r.mono()}, Code: "conformance_unknown_code", Msg: "a robot error the gateway must not answer"})
	c.sendMsg(&protocol.Ack{Meta: protocol.Meta{EventID: "conformance-no-such-event"}})
	time.Sleep(min(r.cfg.Wait, time.Second))
	if e := c.all(from, isError); len(e) > 0 {
		return Fail, "gateway answered with " + describe(e[0])
	}
	return Pass, "no reply to an error with an unknown code nor to an ack for an unknown id"
}

func frame(build func() []byte, codes ...string) func(context.Context, *runner) (Status, string) {
	return func(ctx context.Context, r *runner) (Status, string) {
		return r.badInput(ctx, websocket.BinaryMessage, build(), "", codes...)
	}
}

func micFrame(flag protocol.Flag, n int) []byte {
	return protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Flag: flag, Stream: 900, Seq: 1}, make([]byte, n))
}

func shortFrame() []byte { return micFrame(protocol.FlagStart, 0)[:10] }
func unknownKind() []byte {
	f := micFrame(protocol.FlagStart, 4)
	f[1] = 9
	return f
}
func badVersion() []byte {
	f := micFrame(protocol.FlagStart, 4)
	f[0] = 2
	return f
}
func badFlag() []byte { return micFrame(7, 4) }
func lengthMismatch() []byte {
	f := micFrame(protocol.FlagStart, 8)
	binary.LittleEndian.PutUint32(f[20:], 200)
	return f
}
func ttsFromRobot() []byte {
	return protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Stream: 1}, make([]byte, 4))
}
func bigMic() []byte { return micFrame(protocol.FlagStart, protocol.MaxMicFrame-protocol.HeaderSize+2) }

// ---- §2.4 read limit, §2.5 close, §3.5 resume ----

func chkReadLimit(ctx context.Context, r *runner) (Status, string) {
	// One frame whose header already declares the whole size, so the
	// gateway can refuse it at once.
	c, err := r.connectBuf(ctx, "", protocol.MaxUplink+1024)
	if err != nil {
		return Fail, "could not open a session: " + err.Error()
	}
	defer c.abort()
	huge := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindVideo, Flag: protocol.FlagImage, Mark: protocol.MarkKeyFrame}, make([]byte, protocol.MaxUplink))
	werr := make(chan error, 1)
	go func() { werr <- c.send(websocket.BinaryMessage, huge) }()
	code, err, ok := c.waitClosed(10 * time.Second)
	switch {
	case !ok:
		return Fail, fmt.Sprintf("a %d-byte message did not end the connection", len(huge))
	case code != protocol.CloseMessageTooBig:
		return Fail, fmt.Sprintf("%d-byte message: connection ended with %d (%v), want close 1009", len(huge), code, err)
	}
	return Pass, fmt.Sprintf("%d-byte message: close 1009", len(huge))
}

func chkCloseEcho(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	defer c.abort()
	if err := c.closeWith(protocol.CloseNormal, "robot shutting down"); err != nil {
		return Fail, "send close: " + err.Error()
	}
	code, err, ok := c.waitClosed(2 * time.Second)
	switch {
	case !ok:
		return Fail, "no close frame and no TCP close within 2 s after the robot's close 1000"
	case code == 0:
		return Fail, fmt.Sprintf("connection dropped without a close frame (%v)", err)
	}
	return Pass, fmt.Sprintf("close frame %d received", code)
}

func chkResume(ctx context.Context, r *runner) (Status, string) {
	c, msg := r.session(ctx)
	if c == nil {
		return Fail, msg
	}
	old := c.hello.SessionID
	// One reliable event in the old session, acked.
	m := robotEvent(r, protocol.TypeState)
	r.sendAndSettle(c, m)
	r.end(c)
	c2, err := r.connect(ctx, old)
	if err != nil {
		return Fail, "reconnect: " + err.Error()
	}
	defer r.end(c2)
	h := c2.hello
	ev := fmt.Sprintf("resume_session %q → session_id %q, resumed %v", old, h.SessionID, h.Resumed)
	switch {
	case h.Resumed && h.SessionID != old:
		return Fail, ev + ": resumed must keep the session id"
	case !h.Resumed && h.SessionID == old:
		return Fail, ev + ": a new session needs a new id"
	}
	// The robot re-sends what it is not sure about: a duplicate is acked.
	if a, _, _, _ := r.sendAndSettle(c2, m); a != 1 {
		return Fail, ev + fmt.Sprintf("; event %s re-sent after the reconnect was not acked", m.Envelope().EventID)
	}
	return Pass, ev + "; re-sent event acked"
}
