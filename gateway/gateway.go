// Package gateway is an embedded implementation of the gateway side of
// protocol v1, for development, demos (`make run`) and tests. It answers each
// finished utterance with TTS (the utterance echoed back at 24 kHz) streamed
// faster than real time, interrupts its own reply when the robot starts a new
// utterance during playback (barge-in), acks control messages and logs every
// event it receives.
//
// It is not the production gateway; it is a faithful peer for the robot so
// that every robot-side behaviour can be exercised over a real WebSocket.
//
// # Concurrency
//
// Each session has one read goroutine and one write goroutine; everything
// sent to the robot goes through the session's write queue. Server and
// Session methods are safe for concurrent use.
package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// Path is the endpoint robots connect to.
const Path = "/v1/robot"

// dedupWindow is how many robot event ids the gateway remembers to drop
// re-sent duplicates (§5.3); a robot re-sends at most its unsettled queue
// (10 000 by default) after a reconnect.
const dedupWindow = 16384

// TTS encodings the gateway can use downlink.
const (
	TTSBinary = "binary"
	TTSBase64 = "base64"
)

// Config configures the embedded gateway.
type Config struct {
	// Token the robot must present as a bearer token. Empty: the gateway
	// does not ask for one and accepts robots with or without a token
	// (development only).
	Token string
	// TTSMode is binary (default) or base64 (JSON tts messages).
	TTSMode string
	// Speed is how much faster than real time TTS is streamed (default 4).
	Speed float64
	// ChunkMS is the TTS chunk length (default 100 ms).
	ChunkMS int
	// Keepalive sent to robots (default 5 s / 15 s).
	Keepalive protocol.Keepalive
	// NoEcho disables answering utterances with TTS.
	NoEcho bool
	// NoPacing streams TTS without following the robot's advertised
	// buffer (docs/protocol.md §7.7): a non-compliant gateway, for tests
	// of the robot's overflow handling.
	NoPacing bool
	// NoBargeIn disables interrupting a reply when the robot speaks.
	NoBargeIn bool
	// Decision answers every robot function_call (delegate, override or
	// illegal); empty means delegate. "none" sends no decision.
	Decision string
	// GreetSkill, if set, is sent to the robot after each greeting (for
	// example a gpio.blink of the robot's eyes).
	GreetSkill *protocol.Skill
	// NoGreeting disables answering greet_signal with a greeting.
	NoGreeting bool
	// ServerVAD finds utterances in the mic stream itself (the robot's
	// continuous mode, where the gateway does VAD) with the same VAD the
	// robot uses locally, instead of relying on the frames' flags.
	ServerVAD bool
	// Codec is pcm (default: PCM both ways, as a v1 gateway) or opus (Opus
	// for each direction the robot offers it, in a binary built with the
	// opus tag; PCM otherwise). Hooks and the echo always see PCM.
	Codec string
	// OpusUpBitrate is the mic bitrate chosen for Opus robots (0: the
	// robot's own); OpusDownBitrate the TTS encoder's (0: 24000).
	OpusUpBitrate, OpusDownBitrate int
	// ReplyPrefixMS of a 440 Hz-free lead-in silence is not added: the echo
	// is the utterance itself, resampled 16 → 24 kHz.
}

func (c *Config) defaults() {
	if c.TTSMode == "" {
		c.TTSMode = TTSBinary
	}
	if c.Speed <= 0 {
		c.Speed = 4
	}
	if c.ChunkMS <= 0 {
		c.ChunkMS = 100
	}
	if c.Keepalive.IntervalMS <= 0 {
		c.Keepalive.IntervalMS = 5000
	}
	if c.Keepalive.TimeoutMS <= 0 {
		c.Keepalive.TimeoutMS = 15000
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.TTSMode != "" && c.TTSMode != TTSBinary && c.TTSMode != TTSBase64 {
		return fmt.Errorf("gateway: tts_mode %q is not binary or base64", c.TTSMode)
	}
	switch c.Decision {
	case "", "none", protocol.DecisionDelegate, protocol.DecisionOverride, protocol.DecisionIllegal:
	default:
		return fmt.Errorf("gateway: decision %q is not delegate, override, illegal or none", c.Decision)
	}
	if err := validateCodec(c.Codec); err != nil {
		return err
	}
	if c.Speed < 0 || c.Speed > 100 {
		return fmt.Errorf("gateway: speed %v is outside 0..100", c.Speed)
	}
	return nil
}

// Event is one thing the gateway received from a robot.
type Event struct {
	Session string
	At      time.Duration // gateway clock (Mono) at receipt
	// Exactly one of Header (binary) or Msg (control) is set.
	Header  *protocol.Header
	Payload []byte
	Msg     protocol.Message
}

// Hooks let tests and tools observe media as it arrives. They run on the
// session's read goroutine and must not block.
type Hooks struct {
	// OnMic gets the mic audio as PCM16LE (decoded if the session
	// negotiated Opus).
	OnMic   func(s *Session, h protocol.Header, pcm []byte)
	OnVideo func(s *Session, h protocol.Header, payload []byte)
	// OnMsg gets each control message the gateway's application acts
	// on: a re-sent duplicate (same event_id) is not handed over again.
	OnMsg func(s *Session, m protocol.Message)
	// OnDuplicate, if set, gets each robot message dropped as a
	// duplicate of one already handed over (it has been acked again).
	OnDuplicate func(s *Session, m protocol.Message)
	// BeforeAck, if set, decides whether a robot control message is acked
	// (tests use it to leave messages unacknowledged).
	BeforeAck func(s *Session, m protocol.Message) bool
}

// Server is the embedded gateway. It implements http.Handler.
type Server struct {
	cfg   Config
	clk   clock.Clock
	log   *slog.Logger
	hooks Hooks

	upgrader websocket.Upgrader

	mu       sync.Mutex
	sessions map[string]*Session
	events   []Event
	keepPCM  bool
	micLat   []time.Duration
	newSess  chan *Session
	nextID   atomic.Uint64
	seen     *seenIDs // robot event ids already handed to the application
	// Lifecycle (Close): quit ends every session; wg counts the
	// goroutines of sessions (serve, write loop, greetings, TTS streams),
	// which log and send until they return; closed refuses new ones.
	quit   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	closed bool

	m struct {
		sessions, badFrames, badMessages, micFrames, videoFrames, controlMsgs *metrics.Counter
		utterances, responses, interrupts, ttsChunks, authFailures            *metrics.Counter
		duplicates                                                            *metrics.Counter
		micLatency                                                            *metrics.Histogram
		micBytes, ttsBytes, ttsFrames                                         *metrics.Counter
	}
}

// New returns a gateway. The clock is used for event timestamps and, when
// the robot runs in the same process with the same clock, for latency.
func New(cfg Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger, hooks Hooks) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	s := &Server{
		cfg: cfg, clk: clk, log: log, hooks: hooks,
		sessions: make(map[string]*Session),
		newSess:  make(chan *Session, 16),
		seen:     newSeenIDs(dedupWindow),
		upgrader: websocket.Upgrader{
			Subprotocols:    []string{protocol.Subprotocol},
			ReadBufferSize:  16 << 10,
			WriteBufferSize: 16 << 10,
		},
	}
	s.m.sessions = reg.Counter("robot_agent_gateway_sessions_total", "Robot sessions accepted.")
	s.m.authFailures = reg.Counter("robot_agent_gateway_auth_failures_total", "Connections refused for bad credentials.")
	s.m.badFrames = reg.Counter("robot_agent_gateway_bad_frames_total", "Binary frames from robots rejected.")
	s.m.badMessages = reg.Counter("robot_agent_gateway_bad_messages_total", "Control messages from robots rejected.")
	s.m.micFrames = reg.Counter("robot_agent_gateway_mic_frames_total", "Mic frames received.")
	s.m.videoFrames = reg.Counter("robot_agent_gateway_video_frames_total", "Video frames received.")
	s.m.controlMsgs = reg.Counter("robot_agent_gateway_control_messages_total", "Control messages received.")
	s.m.duplicates = reg.Counter("robot_agent_gateway_duplicate_events_total", "Robot control messages re-sent with an event_id already handed to the application: acked again, not acted on.")
	s.m.utterances = reg.Counter("robot_agent_gateway_utterances_total", "Utterances completed (end flag received).")
	s.m.responses = reg.Counter("robot_agent_gateway_responses_total", "TTS responses started.")
	s.m.interrupts = reg.Counter("robot_agent_gateway_interrupts_total", "Interrupts sent (barge-in).")
	s.m.micBytes = reg.Counter("robot_agent_gateway_mic_bytes_total", "Mic frame bytes received (whole binary messages).")
	s.m.ttsBytes = reg.Counter("robot_agent_gateway_tts_bytes_total", "TTS frame bytes sent (whole binary messages).")
	s.m.ttsFrames = reg.Counter("robot_agent_gateway_tts_frames_total", "TTS binary frames sent.")
	s.m.ttsChunks = reg.Counter("robot_agent_gateway_tts_chunks_total", "TTS chunks sent.")
	s.m.micLatency = reg.Histogram("robot_agent_gateway_mic_latency_seconds", "Mic frame end (robot clock) to received by the gateway, in seconds; meaningful when robot and gateway share a clock (embedded gateway).", nil)
	s.quit, s.stop = context.WithCancel(context.Background())
	return s, nil
}

// track counts one more session goroutine, unless the server is closed.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// spawn runs f on a tracked goroutine; false (f not run) once the server
// is closed.
func (s *Server) spawn(f func()) bool {
	if !s.track() {
		return false
	}
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// Close ends every session (their connections are closed) and waits until
// all their goroutines have returned, so that nothing logs or sends after
// it, or until ctx is done. New connections are refused from then on. An
// http.Server's Shutdown does not do this: it does not track hijacked
// (WebSocket) connections. Any goroutine; idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	var conns []*websocket.Conn
	for _, ss := range s.sessions {
		ss.mu.Lock()
		if ss.conn != nil {
			conns = append(conns, ss.conn)
		}
		ss.mu.Unlock()
	}
	s.mu.Unlock()
	s.stop()
	for _, c := range conns {
		c.Close()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gateway: close: sessions still running: %w", ctx.Err())
	}
}

// KeepPayloads makes Events retain media payloads (tests).
func (s *Server) KeepPayloads(on bool) {
	s.mu.Lock()
	s.keepPCM = on
	s.mu.Unlock()
}

// Events returns a copy of everything received so far.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// MicLatencies returns, for every mic frame received, the time from the end
// of the frame's capture to its receipt. Meaningful only when robot and
// gateway share one clock (same process).
func (s *Server) MicLatencies() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.micLat...)
}

// NextSession waits for the next robot session to complete its handshake.
func (s *Server) NextSession(ctx context.Context) (*Session, error) {
	select {
	case ss := <-s.newSess:
		return ss, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Sessions returns the live sessions.
func (s *Server) Sessions() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) record(e Event) {
	s.mu.Lock()
	if !s.keepPCM {
		e.Payload = nil
	}
	s.events = append(s.events, e)
	s.mu.Unlock()
}

// ServeHTTP upgrades robot connections on Path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	dev := r.Header.Get("X-Robot-Device-Id")
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	switch {
	case s.cfg.Token != "" && (!ok || tok == ""):
		s.m.authFailures.Inc()
		http.Error(w, "gateway: missing bearer token in Authorization header", http.StatusUnauthorized)
		return
	case s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) != 1:
		s.m.authFailures.Inc()
		http.Error(w, "gateway: bearer token refused", http.StatusForbidden)
		return
	case dev == "":
		s.m.authFailures.Inc()
		http.Error(w, "gateway: missing X-Robot-Device-Id header", http.StatusUnauthorized)
		return
	}
	if !containsToken(websocket.Subprotocols(r), protocol.Subprotocol) {
		http.Error(w, "gateway: subprotocol "+protocol.Subprotocol+" required", http.StatusBadRequest)
		return
	}
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Warn("gateway: upgrade failed", "err", err)
		return
	}
	if !s.track() {
		conn.Close()
		return
	}
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.quit, func() { cancel(); conn.Close() })
	defer stop()
	s.serve(ctx, conn, dev)
}

func containsToken(list []string, t string) bool {
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}

type outMsg struct {
	mt   int
	data []byte
}

// Session is one connected robot.
type Session struct {
	ID       string
	DeviceID string
	Hello    *protocol.RobotHello

	srv  *Server
	out  chan outMsg
	done chan struct{}
	// writerGone is closed when the write loop has returned (write error
	// or session end): nothing drains out any more, so senders must not
	// wait for room in it.
	writerGone chan struct{}
	pong       chan []byte // the latest unanswered ping's data (queuePong)

	// streamMu is held while one response's audio is being sent, so
	// responses never interleave on the wire (the robot's jitter buffer
	// plays them in arrival order).
	streamMu sync.Mutex

	vad *serverVAD // nil unless Config.ServerVAD

	codec sessionCodec // negotiated audio and Opus state (codec.go)
	pace  *pacer       // downlink pacing to the robot's playback buffer (pacing.go)

	mu        sync.Mutex
	conn      *websocket.Conn
	utt       map[uint32][]int16
	nextResp  uint32
	active    uint32             // response being streamed/played, 0 if none
	cancelTTS context.CancelFunc // stops streaming the active response
	seq       uint32
	evSeq     uint64
}

func (s *Server) serve(ctx context.Context, conn *websocket.Conn, dev string) {
	defer conn.Close()
	conn.SetReadLimit(protocol.MaxControl)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	mt, data, err := conn.ReadMessage()
	if err != nil {
		s.log.Warn("gateway: no hello from robot", "device", dev, "err", err)
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			// §3.1: no hello within 5 s is a policy violation (1008).
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "no hello within 5 s"), time.Now().Add(time.Second))
			drainAfterClose(conn, time.Second)
		}
		return
	}
	var hello *protocol.RobotHello
	if mt == websocket.TextMessage {
		m, derr := protocol.DecodeFromRobot(data)
		err = derr
		if h, ok := m.(*protocol.RobotHello); ok {
			hello = h
		} else if err == nil {
			err = fmt.Errorf("first message is %q, want hello", m.Envelope().Type)
		}
	} else {
		err = errors.New("first message is binary, want hello")
	}
	code, closeCode := protocol.ErrorCode(err), websocket.CloseProtocolError
	if err == nil && hello.DeviceID != dev {
		err = fmt.Errorf("hello device_id %q differs from X-Robot-Device-Id %q", hello.DeviceID, dev)
		code, closeCode = protocol.CodeUnauthorized, websocket.ClosePolicyViolation
	}
	if err != nil {
		s.m.badMessages.Inc()
		e, _ := protocol.Marshal(&protocol.Error{Code: code, Msg: "gateway: " + err.Error()})
		conn.WriteMessage(websocket.TextMessage, e)
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(closeCode, "bad hello"), time.Now().Add(time.Second))
		s.log.Warn("gateway: bad hello", "device", dev, "err", err)
		return
	}
	ss := &Session{
		ID:       fmt.Sprintf("gw-%d", s.nextID.Add(1)),
		DeviceID: dev, Hello: hello, srv: s, pace: newPacer(hello.PlaybackBufferMS, !s.cfg.NoPacing && slices.Contains(hello.Capabilities, protocol.CapPlaybackProgress)),
		out:        make(chan outMsg, 4096),
		done:       make(chan struct{}),
		writerGone: make(chan struct{}),
		pong:       make(chan []byte, 1),
		utt:        make(map[uint32][]int16),
		conn:       conn,
	}
	var gh *protocol.GatewayHello
	ss.codec, gh = s.negotiate(hello)
	gh.SessionID, gh.Keepalive = ss.ID, s.cfg.Keepalive
	gh.TS = s.clk.Mono().Microseconds()
	hb, _ := protocol.Marshal(gh)
	// Register the session before the robot can see the hello, so that
	// anyone who sees the robot online also finds the session here.
	s.mu.Lock()
	s.sessions[ss.ID] = ss
	s.mu.Unlock()
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := conn.WriteMessage(websocket.TextMessage, hb); err != nil {
		s.mu.Lock()
		delete(s.sessions, ss.ID)
		s.mu.Unlock()
		return
	}
	s.m.sessions.Inc()
	s.log.Info("gateway: robot online", "session", ss.ID, "device", dev, "model", hello.Model, "agent", hello.AgentVersion, "capabilities", hello.Capabilities,
		"audio_up", gh.AudioUp.Format, "audio_down", gh.AudioDown.Format)
	select {
	case s.newSess <- ss:
	default:
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !s.spawn(func() { ss.writeLoop(sctx, conn) }) {
		// The server is closing (it closes conn): nothing will write,
		// and the read loop below ends at once.
		close(ss.writerGone)
	}
	if s.cfg.ServerVAD {
		vad, err := newServerVAD(sctx, ss)
		if err != nil {
			s.log.Error("gateway: server VAD unavailable", "err", err)
		} else {
			ss.vad = vad
			defer vad.close()
		}
	}
	timeout := time.Duration(s.cfg.Keepalive.TimeoutMS) * time.Millisecond
	conn.SetReadLimit(protocol.MaxUplink)
	conn.SetPingHandler(func(appData string) error {
		conn.SetReadDeadline(time.Now().Add(timeout))
		ss.queuePong([]byte(appData))
		return nil
	})
	err = ss.readLoop(sctx, conn, timeout)
	if errors.Is(err, websocket.ErrReadLimit) {
		// gorilla has sent close 1009; keep reading until the robot
		// answers so the close frame is not lost to a TCP reset (§2.4).
		drainAfterClose(conn, time.Second)
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		// §3.6: the link is dead; say so in case the robot still listens.
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "keepalive timeout"), time.Now().Add(time.Second))
	}
	close(ss.done)
	ss.stopActive()
	s.mu.Lock()
	delete(s.sessions, ss.ID)
	s.mu.Unlock()
	s.log.Info("gateway: robot offline", "session", ss.ID, "device", dev, "reason", err)
}

func (ss *Session) writeLoop(ctx context.Context, conn *websocket.Conn) {
	defer close(ss.writerGone)
	write := func(m outMsg) bool {
		var err error
		if m.mt == websocket.PongMessage || m.mt == websocket.CloseMessage {
			err = conn.WriteControl(m.mt, m.data, time.Now().Add(5*time.Second))
		} else {
			conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
			err = conn.WriteMessage(m.mt, m.data)
		}
		if err != nil {
			ss.srv.log.Warn("gateway: write to robot failed; closing the connection", "session", ss.ID, "err", err)
			conn.Close()
			return false
		}
		return true
	}
	for {
		// A pong goes before queued messages.
		select {
		case p := <-ss.pong:
			if !write(outMsg{websocket.PongMessage, p}) {
				return
			}
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return
		case p := <-ss.pong:
			if !write(outMsg{websocket.PongMessage, p}) {
				return
			}
		case m := <-ss.out:
			if !write(m) {
				return
			}
		}
	}
}

// queuePong hands a pong to the write loop without waiting: the read loop
// must never wait for the write side (the robot may be waiting for the
// gateway to read before it reads again). A pong still waiting is
// replaced; answering only the latest ping is allowed (RFC 6455 §5.5.3).
func (ss *Session) queuePong(data []byte) {
	for {
		select {
		case ss.pong <- data:
			return
		default:
		}
		select {
		case <-ss.pong:
		default:
		}
	}
}

func (ss *Session) send(m outMsg) bool {
	select {
	case ss.out <- m:
		return true
	case <-ss.done:
		return false
	case <-ss.writerGone:
		return false
	}
}

// Send sends a control message to the robot, assigning an event_id for the
// message types the robot must ack (skill, arbiter) if none is set.
func (ss *Session) Send(m protocol.Message) error {
	env := m.Envelope()
	if env.TS == 0 {
		env.TS = ss.srv.clk.Mono().Microseconds()
	}
	if env.EventID == "" {
		switch m.(type) {
		case *protocol.Skill, *protocol.Arbiter, *protocol.Interrupt, *protocol.KeyframeRequest, *protocol.GoAway:
			ss.mu.Lock()
			ss.evSeq++
			env.EventID = fmt.Sprintf("%s-ev-%d", ss.ID, ss.evSeq)
			ss.mu.Unlock()
		}
	}
	data, err := protocol.Marshal(m)
	if err != nil {
		return err
	}
	return ss.SendRaw(websocket.TextMessage, data)
}

// SendRaw sends bytes as they are (tests use it to send malformed input).
func (ss *Session) SendRaw(messageType int, data []byte) error {
	if !ss.send(outMsg{messageType, data}) {
		return errors.New("gateway: session closed")
	}
	return nil
}

// Close closes the session with a close frame.
func (ss *Session) Close(reason string) {
	ss.send(outMsg{websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, reason)})
}

// Abort drops the connection without a close frame, as a network failure
// would.
func (ss *Session) Abort() {
	ss.mu.Lock()
	c := ss.conn
	ss.mu.Unlock()
	if c != nil {
		c.UnderlyingConn().Close()
	}
}

// Done is closed when the session has ended.
func (ss *Session) Done() <-chan struct{} { return ss.done }

func (ss *Session) readLoop(ctx context.Context, conn *websocket.Conn, timeout time.Duration) error {
	s := ss.srv
	for {
		conn.SetReadDeadline(time.Now().Add(timeout))
		mt, data, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		now := s.clk.Mono()
		switch mt {
		case websocket.BinaryMessage:
			h, payload, err := ss.codec.audio.ParseFrame(data)
			if err == nil && h.Kind == protocol.KindTTSAudio {
				err = fmt.Errorf("%w: tts_audio frames are gateway → robot only", protocol.ErrUnsupported)
			}
			if err != nil {
				s.m.badFrames.Inc()
				s.log.Warn("gateway: rejected binary frame", "session", ss.ID, "err", err)
				ss.Send(&protocol.Error{Code: protocol.FrameErrorCode(err), Msg: "gateway: " + err.Error()})
				continue
			}
			s.record(Event{Session: ss.ID, At: now, Header: &h, Payload: append([]byte(nil), payload...)})
			switch h.Kind {
			case protocol.KindMicAudio:
				s.m.micBytes.Add(int64(len(data)))
				if ss.codec.audio.UpOpus() {
					pcm, err := ss.codec.decodeMic(h, payload)
					if err != nil {
						s.m.badFrames.Inc()
						s.log.Warn("gateway: rejected mic frame", "session", ss.ID, "err", err)
						ss.Send(&protocol.Error{Code: protocol.CodeBadFrame, Msg: "gateway: " + err.Error()})
						continue
					}
					payload = pcm
				}
				ss.onMic(ctx, h, payload, now)
			case protocol.KindVideo:
				s.m.videoFrames.Inc()
				if s.hooks.OnVideo != nil {
					s.hooks.OnVideo(ss, h, payload)
				}
			}
		case websocket.TextMessage:
			m, err := protocol.DecodeFromRobot(data)
			if err != nil {
				s.m.badMessages.Inc()
				// §9.1: the ref is the event_id whenever the message has
				// one, so the error settles it.
				ref := protocol.RefOf(data)
				s.log.Warn("gateway: rejected control message", "session", ss.ID, "err", err)
				ss.Send(&protocol.Error{Code: protocol.ErrorCode(err), Msg: "gateway: " + err.Error(), Ref: ref})
				continue
			}
			s.m.controlMsgs.Inc()
			s.record(Event{Session: ss.ID, At: now, Msg: m})
			ss.onControl(m)
		}
	}
}

func (ss *Session) onControl(m protocol.Message) {
	s := ss.srv
	env := m.Envelope()
	ack := s.hooks.BeforeAck == nil || s.hooks.BeforeAck(ss, m)
	if _, isAck := m.(*protocol.Ack); ack && !isAck && env.EventID != "" {
		data, _ := protocol.Marshal(&protocol.Ack{Meta: protocol.Meta{Type: protocol.TypeAck, EventID: env.EventID}})
		ss.SendRaw(websocket.TextMessage, data)
	}
	if _, isAck := m.(*protocol.Ack); !isAck && env.EventID != "" && !s.seen.first(env.EventID) {
		// §5.3: a duplicate is acked again but not handed to the
		// application a second time.
		s.m.duplicates.Inc()
		s.log.Debug("gateway: duplicate robot event, acked again", "session", ss.ID, "event", env.EventID, "type", env.Type)
		if s.hooks.OnDuplicate != nil {
			s.hooks.OnDuplicate(ss, m)
		}
		return
	}
	switch v := m.(type) {
	case *protocol.State:
		s.log.Info("gateway: state", "session", ss.ID, "event", v.EventID, "name", v.StateName, "value", string(v.StateValue))
	case *protocol.FaceInfo:
		s.log.Info("gateway: face_info", "session", ss.ID, "event", v.EventID, "identities", v.Identities)
	case *protocol.GreetSignal:
		s.log.Info("gateway: greet_signal", "session", ss.ID, "event", v.EventID, "uid", v.UID)
		if !s.cfg.NoGreeting {
			s.spawn(func() { ss.greet(v.UID) })
		}
	case *protocol.FunctionCall:
		s.log.Info("gateway: function_call", "session", ss.ID, "event", v.EventID, "call", v.FunctionCall)
		if d := s.cfg.Decision; d != "none" {
			if d == "" {
				d = protocol.DecisionDelegate
			}
			ss.Send(&protocol.Arbiter{Ref: v.EventID, Decision: d})
		}
	case *protocol.SkillResult:
		s.log.Info("gateway: skill_result", "session", ss.ID, "ref", v.Ref, "ok", v.OK, "error", v.Error)
	case *protocol.PlaybackProgress:
		s.log.Debug("gateway: playback_progress", "session", ss.ID, "response", v.ResponseID, "samples", v.SamplesPlayed, "done", v.Done, "interrupted", v.Interrupted)
		ss.pace.progress(v)
		if v.LostSamples > 0 {
			s.log.Warn("gateway: robot dropped TTS audio (buffer overflow)", "session", ss.ID, "response", v.ResponseID, "lost_samples", v.LostSamples)
		}
		if v.Done || v.Interrupted {
			ss.mu.Lock()
			if ss.active == v.ResponseID {
				ss.active = 0
				if v.Interrupted && ss.cancelTTS != nil {
					// §7.3: a robot-reported cut is an interruption:
					// stop generating the response.
					ss.cancelTTS()
				}
			}
			ss.mu.Unlock()
		}
	case *protocol.Error:
		s.log.Warn("gateway: robot reported an error", "session", ss.ID, "code", v.Code, "msg", v.Msg, "ref", v.Ref)
	case *protocol.Ack:
		s.log.Debug("gateway: ack", "session", ss.ID, "event", v.EventID)
	}
	if s.hooks.OnMsg != nil {
		s.hooks.OnMsg(ss, m)
	}
}

func (ss *Session) onMic(ctx context.Context, h protocol.Header, payload []byte, now time.Duration) {
	s := ss.srv
	s.m.micFrames.Inc()
	n := len(payload) / 2
	end := time.Duration(h.Timestamp)*time.Microsecond + time.Duration(n)*time.Second/16000
	s.m.micLatency.ObserveDuration(now - end)
	s.mu.Lock()
	s.micLat = append(s.micLat, now-end)
	s.mu.Unlock()
	if s.hooks.OnMic != nil {
		s.hooks.OnMic(ss, h, payload)
	}
	if ss.vad != nil {
		// Server-side VAD: the robot streams continuously; utterances are
		// what the VAD finds in the stream.
		ss.vad.feed(payload)
		return
	}
	samples := make([]int16, len(payload)/2)
	pcm.BytesToInt16(samples, payload)
	ss.segment(ctx, h.Flag, h.Stream, samples)
}

// segment collects one utterance from frames flagged start/continue/end:
// a start during a reply interrupts it (barge-in); an end answers it.
func (ss *Session) segment(ctx context.Context, flag protocol.Flag, stream uint32, pcm []int16) {
	s := ss.srv
	ss.mu.Lock()
	if flag == protocol.FlagStart {
		ss.utt[stream] = ss.utt[stream][:0]
		if ss.active != 0 && !s.cfg.NoBargeIn {
			id := ss.active
			ss.active = 0
			if ss.cancelTTS != nil {
				ss.cancelTTS()
			}
			ss.mu.Unlock()
			s.m.interrupts.Inc()
			s.log.Info("gateway: barge-in, interrupting reply", "session", ss.ID, "response", id, "utterance", stream)
			ss.Send(&protocol.Interrupt{ResponseID: id, Reason: "barge_in"})
			ss.mu.Lock()
		}
	}
	buf := append(ss.utt[stream], pcm...)
	ss.utt[stream] = buf
	if flag != protocol.FlagEnd {
		ss.mu.Unlock()
		return
	}
	delete(ss.utt, stream)
	ss.mu.Unlock()
	s.m.utterances.Inc()
	s.log.Info("gateway: utterance", "session", ss.ID, "utterance", stream, "ms", len(buf)*1000/16000)
	if s.cfg.NoEcho || len(buf) == 0 {
		return
	}
	ss.respond(ctx, stream, buf)
}

// respond answers an utterance: asr text, an llm delta, and the utterance
// itself as 24 kHz TTS streamed faster than real time.
func (ss *Session) respond(ctx context.Context, utt uint32, pcm16k []int16) {
	s := ss.srv
	pcm := Upsample16to24(pcm16k)
	ss.mu.Lock()
	ss.nextResp++
	id := ss.nextResp
	if ss.cancelTTS != nil {
		ss.cancelTTS()
	}
	rctx, cancel := context.WithCancel(ctx)
	ss.cancelTTS = cancel
	ss.active = id
	ss.mu.Unlock()
	s.m.responses.Inc()
	ms := len(pcm16k) * 1000 / 16000
	ss.Send(&protocol.ASR{ResponseID: id, Text: fmt.Sprintf("(utterance %d, %d ms)", utt, ms), Final: true})
	ss.Send(&protocol.Text{Meta: protocol.Meta{Type: protocol.TypeLLMDelta}, ResponseID: id, Text: fmt.Sprintf("Echoing %d ms of audio.", ms)})
	ss.Send(&protocol.Text{Meta: protocol.Meta{Type: protocol.TypeLLMDone}, ResponseID: id})
	s.spawn(func() { ss.streamTTS(rctx, id, pcm) })
}

// greet answers a greet signal the way the gateway SDK's GreetResponse
// does: VLM text deltas, then TTS (a two-note chime here) as base64
// greet_tts_delta chunks, then the optional GreetSkill.
func (ss *Session) greet(uid string) {
	s := ss.srv
	ss.streamMu.Lock()
	defer ss.streamMu.Unlock()
	ss.mu.Lock()
	ss.nextResp++
	id := ss.nextResp
	ss.mu.Unlock()
	s.m.responses.Inc()
	name := uid
	if name == "" {
		name = "there"
	}
	ss.Send(&protocol.Text{Meta: protocol.Meta{Type: protocol.TypeGreetVLMDelta}, ResponseID: id, Text: "Hello, " + name + "!"})
	ss.Send(&protocol.Text{Meta: protocol.Meta{Type: protocol.TypeGreetVLMDone}, ResponseID: id})
	chime := Chime()
	chunk := 24000 * s.cfg.ChunkMS / 1000
	for off := 0; off < len(chime); off += chunk {
		end := min(off+chunk, len(chime))
		b := make([]byte, 2*(end-off))
		pcm.Int16ToBytes(b, chime[off:end])
		if ss.Send(&protocol.TTS{Meta: protocol.Meta{Type: protocol.TypeGreetTTS}, ResponseID: id, AudioB64: base64.StdEncoding.EncodeToString(b)}) != nil {
			return
		}
	}
	ss.Send(&protocol.TTSDone{Meta: protocol.Meta{Type: protocol.TypeGreetTTSDone}, ResponseID: id})
	if s.cfg.GreetSkill != nil {
		sk := *s.cfg.GreetSkill
		ss.Send(&sk)
	}
}

// Chime is the greeting sound: 660 Hz then 880 Hz, 250 ms each, with short
// fades, at 24 kHz.
func Chime() []int16 {
	const n = 6000
	out := make([]int16, 2*n)
	for i := range out {
		f := 660.0
		j := i
		if i >= n {
			f, j = 880.0, i-n
		}
		env := math.Min(1, math.Min(float64(j)/240, float64(n-j)/240))
		out[i] = int16(6000 * env * math.Sin(2*math.Pi*f*float64(j)/24000))
	}
	return out
}

// StreamTTS streams pcm (24 kHz mono) to the robot as a new response and
// returns its response id. Tests use it to send known audio.
func (ss *Session) StreamTTS(ctx context.Context, pcm []int16) uint32 {
	ss.mu.Lock()
	ss.nextResp++
	id := ss.nextResp
	rctx, cancel := context.WithCancel(ctx)
	if ss.cancelTTS != nil {
		ss.cancelTTS()
	}
	ss.cancelTTS = cancel
	ss.active = id
	ss.mu.Unlock()
	ss.srv.m.responses.Inc()
	ss.streamTTS(rctx, id, pcm)
	return id
}

// Interrupt interrupts the active response, as barge-in would.
func (ss *Session) Interrupt() uint32 {
	ss.mu.Lock()
	id := ss.active
	ss.active = 0
	if ss.cancelTTS != nil {
		ss.cancelTTS()
	}
	ss.mu.Unlock()
	ss.srv.m.interrupts.Inc()
	ss.Send(&protocol.Interrupt{ResponseID: id, Reason: "test"})
	return id
}

func (ss *Session) stopActive() {
	ss.mu.Lock()
	if ss.cancelTTS != nil {
		ss.cancelTTS()
	}
	ss.mu.Unlock()
}

func (ss *Session) streamTTS(ctx context.Context, id uint32, pcm []int16) {
	s := ss.srv
	ss.streamMu.Lock()
	defer ss.streamMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	ss.codec.ttsPend = ss.codec.ttsPend[:0] // an interrupted response's partial packet
	chunk := 24000 * s.cfg.ChunkMS / 1000
	pace := time.Duration(float64(time.Duration(s.cfg.ChunkMS)*time.Millisecond) / s.cfg.Speed)
	t := time.NewTicker(pace)
	defer t.Stop()
	for off := 0; off < len(pcm); off += chunk {
		end := min(off+chunk, len(pcm))
		last := end == len(pcm)
		if !ss.pace.acquire(ctx, id, int64(end-off)) {
			return
		}
		if !ss.sendTTSChunk(id, pcm[off:end], last) {
			return
		}
		if last {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	ss.Send(&protocol.TTSDone{ResponseID: id})
}

func (ss *Session) sendTTSChunk(id uint32, samples []int16, last bool) bool {
	s := ss.srv
	b := make([]byte, 2*len(samples))
	pcm.Int16ToBytes(b, samples)
	s.m.ttsChunks.Inc()
	if s.cfg.TTSMode == TTSBase64 {
		return ss.Send(&protocol.TTS{ResponseID: id, AudioB64: base64.StdEncoding.EncodeToString(b), Last: last}) == nil
	}
	if ss.codec.audio.DownOpus() {
		// One Opus packet per frame (docs/protocol.md 17.3).
		return ss.codec.encodeTTS(samples, last, func(pkt []byte, final bool) bool {
			return ss.sendTTSFrame(id, pkt, final)
		})
	}
	return ss.sendTTSFrame(id, b, last)
}

// sendTTSFrame sends one kind 3 frame with the next sequence number.
func (ss *Session) sendTTSFrame(id uint32, payload []byte, last bool) bool {
	s := ss.srv
	ss.mu.Lock()
	ss.seq++
	seq := ss.seq
	ss.mu.Unlock()
	flag := protocol.FlagTTSChunk
	if last {
		flag = protocol.FlagTTSLast
	}
	frame := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Flag: flag, Stream: id, Seq: seq, Timestamp: s.clk.Mono().Microseconds()}, payload)
	s.m.ttsBytes.Add(int64(len(frame)))
	s.m.ttsFrames.Inc()
	return ss.SendRaw(websocket.BinaryMessage, frame) == nil
}

// drainAfterClose reads and discards what the peer still sends after our
// close frame, until it closes the connection, nothing arrives for idle, or
// 10·idle passes: closing a socket with unread data resets it and the peer
// may lose the close frame.
func drainAfterClose(conn *websocket.Conn, idle time.Duration) {
	nc := conn.UnderlyingConn()
	buf := make([]byte, 32<<10)
	end := time.Now().Add(10 * idle)
	for time.Now().Before(end) {
		d := time.Now().Add(idle)
		if d.After(end) {
			d = end
		}
		nc.SetReadDeadline(d)
		if _, err := nc.Read(buf); err != nil {
			return
		}
	}
}
