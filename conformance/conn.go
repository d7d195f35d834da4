package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/protocol"
)

// rx is one thing received from the gateway.
type rx struct {
	at   time.Time
	text bool
	data []byte
	// Text messages: the decoded message or why it did not decode.
	msg    protocol.Message
	msgErr error
	// Binary messages: the header or why it did not parse.
	hdr      protocol.Header
	frameErr error
}

// robotConn is one scripted robot connection. A reader goroutine records
// everything the gateway sends and behaves like a well-behaved robot unless
// told otherwise: it acks every reliable gateway message and answers every
// skill with one skill_result (unknown_skill).
//
// # Concurrency
//
// Methods are safe for concurrent use; the reader goroutine is the only
// reader of ws, and writes are serialised by wmu.
type robotConn struct {
	ws    *websocket.Conn
	hello *protocol.GatewayHello
	robot *protocol.RobotHello
	start time.Time

	wmu sync.Mutex

	mu       sync.Mutex
	msgs     []rx
	changed  chan struct{}
	done     chan struct{}
	closeErr error     // why the reader stopped
	closedAt time.Time // when
	pingsIn  int
	pongsIn  int
	autoAck  bool
	silent   bool // do not answer pings (keepalive check)
	seq      int
}

// dialOpts says how to present the upgrade request.
type dialOpts struct {
	token, device string
	noAuth        bool
	subprotocols  []string
	writeBuf      int // WebSocket write buffer: a message up to it goes out as one frame
}

func (r *runner) dial(ctx context.Context, o dialOpts) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{
		HandshakeTimeout: 5 * time.Second,
		Subprotocols:     o.subprotocols,
		Proxy:            http.ProxyFromEnvironment,
		NetDialContext:   (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		WriteBufferSize:  o.writeBuf,
	}
	if d.Subprotocols == nil {
		d.Subprotocols = []string{protocol.Subprotocol}
	}
	h := http.Header{}
	if !o.noAuth {
		h.Set("Authorization", "Bearer "+o.token)
	}
	if o.device != "" {
		h.Set("X-Robot-Device-Id", o.device)
	}
	return d.DialContext(ctx, r.cfg.URL, h)
}

// robotHello is the hello the scripted robot sends.
func (r *runner) robotHello(resume string) *protocol.RobotHello {
	up := protocol.AudioParams{Format: protocol.FormatPCM16LE, SampleRate: 16000, Channels: 1, FrameMS: 20}
	down := protocol.AudioParams{Format: protocol.FormatPCM16LE, SampleRate: 24000, Channels: 1}
	return &protocol.RobotHello{
		Meta:     protocol.Meta{Type: protocol.TypeHello, TS: r.mono()},
		Protocol: protocol.Version, Minor: protocol.MinorVersion,
		DeviceID: r.cfg.DeviceID, Model: "conformance-kit", AgentVersion: "conformance",
		BootID: r.bootID,
		Capabilities: []string{protocol.CapMicAudio, protocol.CapTTSAudio, protocol.CapTTSBase64, protocol.CapState,
			protocol.CapFaceInfo, protocol.CapGreet, protocol.CapFunctionCall, protocol.CapSkill, protocol.CapPlaybackProgress,
			"conformance_unknown_capability"},
		AudioUp: up, AudioDown: []protocol.AudioParams{down},
		Audio:         &protocol.AudioOffer{Up: []protocol.AudioParams{up}, Down: []protocol.AudioParams{down}},
		ResumeSession: resume,
	}
}

// connect dials with valid credentials, sends hello and waits for the
// gateway's hello. The returned connection's reader is running.
func (r *runner) connect(ctx context.Context, resume string) (*robotConn, error) {
	return r.connectBuf(ctx, resume, 0)
}

// connectBuf is connect with a write buffer of writeBuf bytes (0: the
// default).
func (r *runner) connectBuf(ctx context.Context, resume string, writeBuf int) (*robotConn, error) {
	ws, resp, err := r.dial(ctx, dialOpts{token: r.cfg.Token, device: r.cfg.DeviceID, writeBuf: writeBuf})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("upgrade refused: HTTP %d", resp.StatusCode)
		}
		return nil, err
	}
	c := &robotConn{ws: ws, start: time.Now(), changed: make(chan struct{}), done: make(chan struct{}), autoAck: true}
	c.robot = r.robotHello(resume)
	if err := c.sendMsg(c.robot); err != nil {
		ws.Close()
		return nil, fmt.Errorf("send hello: %w", err)
	}
	go c.read()
	m, ok := c.waitFor(r.cfg.HelloTimeout, func(x rx) bool { return true })
	if !ok {
		c.abort()
		return nil, fmt.Errorf("no message within %v after the robot hello (%v)", r.cfg.HelloTimeout, c.err())
	}
	gh, isHello := m.msg.(*protocol.GatewayHello)
	if !isHello {
		c.abort()
		return nil, fmt.Errorf("first gateway message is %s, want hello", describe(m))
	}
	c.hello = gh
	go c.keepalive()
	return c, nil
}

// keepalive pings every interval_ms of the gateway hello (§3.6) until the
// connection ends or the check makes the robot silent.
func (c *robotConn) keepalive() {
	every := time.Duration(c.hello.Keepalive.IntervalMS) * time.Millisecond
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.mu.Lock()
		silent := c.silent
		c.mu.Unlock()
		if !silent {
			c.ping()
		}
	}
}

func describe(m rx) string {
	switch {
	case !m.text && m.frameErr != nil:
		return fmt.Sprintf("a bad binary frame (%v)", m.frameErr)
	case !m.text:
		return fmt.Sprintf("binary kind %d", m.hdr.Kind)
	case m.msgErr != nil:
		return fmt.Sprintf("an undecodable message %.120q (%v)", m.data, m.msgErr)
	}
	return fmt.Sprintf("%s %.200s", m.msg.Envelope().Type, m.data)
}

func (c *robotConn) read() {
	c.ws.SetPingHandler(func(d string) error {
		c.mu.Lock()
		c.pingsIn++
		silent := c.silent
		c.mu.Unlock()
		if silent {
			return nil
		}
		return c.ws.WriteControl(websocket.PongMessage, []byte(d), time.Now().Add(time.Second))
	})
	c.ws.SetPongHandler(func(string) error {
		c.mu.Lock()
		c.pongsIn++
		c.mu.Unlock()
		c.notify()
		return nil
	})
	// Echo a close frame without blocking the reader (a large write may
	// hold the writer), so the close code is always recorded.
	c.ws.SetCloseHandler(func(code int, _ string) error {
		go c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
		return nil
	})
	c.ws.SetReadLimit(protocol.MaxDownlinkHard)
	for {
		mt, data, err := c.ws.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.closeErr, c.closedAt = err, time.Now()
			c.mu.Unlock()
			close(c.done)
			c.notify()
			return
		}
		x := rx{at: time.Now(), text: mt == websocket.TextMessage, data: data}
		if x.text {
			x.msg, x.msgErr = protocol.DecodeFromGateway(data)
		} else {
			x.hdr, _, x.frameErr = protocol.ParseHeader(data)
		}
		c.mu.Lock()
		c.msgs = append(c.msgs, x)
		auto := c.autoAck
		c.mu.Unlock()
		if auto && x.msg != nil {
			c.behave(x.msg)
		}
		c.notify()
	}
}

// behave answers like a robot: ack reliable messages, one skill_result per
// skill.
func (c *robotConn) behave(m protocol.Message) {
	env := m.Envelope()
	if _, isAck := m.(*protocol.Ack); isAck || env.EventID == "" {
		return
	}
	if _, isHello := m.(*protocol.GatewayHello); isHello {
		return
	}
	c.sendMsg(&protocol.Ack{Meta: protocol.Meta{Type: protocol.TypeAck, EventID: env.EventID}})
	if s, ok := m.(*protocol.Skill); ok {
		c.sendMsg(&protocol.SkillResult{Ref: s.EventID, OK: false,
			Error: &protocol.ErrorBody{Code: protocol.CodeUnknownSkill, Msg: "conformance robot has no skills"}})
	}
}

func (c *robotConn) notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// sendMsg marshals and sends m; reliable robot messages without an
// event_id get none (callers set it).
func (c *robotConn) sendMsg(m protocol.Message) error {
	data, err := protocol.Marshal(m)
	if err != nil {
		return err
	}
	return c.send(websocket.TextMessage, data)
}

func (c *robotConn) send(mt int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(mt, data)
}

func (c *robotConn) ping() error {
	return c.ws.WriteControl(websocket.PingMessage, []byte("conformance"), time.Now().Add(time.Second))
}

// closeWith sends a close frame.
func (c *robotConn) closeWith(code int, reason string) error {
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
}

func (c *robotConn) abort() { c.ws.Close() }

func (c *robotConn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// index returns how many messages were received so far (a cursor for
// waitFrom).
func (c *robotConn) index() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func (c *robotConn) waitFor(d time.Duration, pred func(rx) bool) (rx, bool) {
	return c.waitFrom(0, d, pred)
}

// waitFrom waits up to d for a message at index ≥ from that matches pred.
func (c *robotConn) waitFrom(from int, d time.Duration, pred func(rx) bool) (rx, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for i := from; i < len(c.msgs); i++ {
			if pred(c.msgs[i]) {
				m := c.msgs[i]
				c.mu.Unlock()
				return m, true
			}
		}
		from = len(c.msgs)
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return rx{}, false
		}
	}
}

// all returns the messages at index ≥ from that match pred.
func (c *robotConn) all(from int, pred func(rx) bool) []rx {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []rx
	for i := from; i < len(c.msgs); i++ {
		if pred(c.msgs[i]) {
			out = append(out, c.msgs[i])
		}
	}
	return out
}

// waitClosed waits up to d for the connection to end and returns the close
// code (0 for an end without a close frame) and the error.
func (c *robotConn) waitClosed(d time.Duration) (code int, err error, ok bool) {
	select {
	case <-c.done:
	case <-time.After(d):
		return 0, nil, false
	}
	err = c.err()
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code, err, true
	}
	return 0, err, true
}

// nextID returns the next robot event id of this connection's run.
func (r *runner) nextID() string {
	r.seq++
	return fmt.Sprintf("%s-%d", r.bootID, r.seq)
}

// Predicates.

func isAckFor(id string) func(rx) bool {
	return func(x rx) bool {
		a, ok := x.msg.(*protocol.Ack)
		return ok && a.EventID == id
	}
}

func isErrorFor(id string) func(rx) bool {
	return func(x rx) bool {
		e, ok := x.msg.(*protocol.Error)
		return ok && e.Ref == id
	}
}

func isError(x rx) bool {
	_, ok := x.msg.(*protocol.Error)
	return ok
}

func settles(id string) func(rx) bool {
	a, e := isAckFor(id), isErrorFor(id)
	return func(x rx) bool { return a(x) || e(x) }
}
