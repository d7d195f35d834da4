// Package uplink is the robot's WebSocket connection to the agent gateway
// (protocol v1, docs/protocol.md).
//
// It carries two lanes. The fast lane takes mic audio from the capture pump
// through a lock-free ring (no blocking, no allocation, drops counted) and
// hands downlink TTS audio straight from the read pump to the playback
// jitter buffer. The control lane (Outbox) is lossless and ordered: every
// message stays queued until the gateway acks its event_id and is resent in
// order after a reconnect.
//
// # Concurrency
//
// A Client runs exactly one read pump and one write pump per connection
// (gorilla/websocket allows one concurrent reader and one concurrent writer);
// every write, pings and the close frame included, happens on the write pump.
// Gateway control messages are handed to the ControlHandler on one control
// goroutine, in order. SendMic may be called from one producer goroutine
// (the capture pump); Emit from any goroutine; Run once.
package uplink

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
	"github.com/robot-agent/robot-agent/protocol"
)

// Errors.
var (
	ErrHandshake    = errors.New("uplink: handshake failed")
	ErrUnauthorized = errors.New("uplink: gateway refused the credentials")
)

// TTSSink receives downlink audio on the read pump. PushPCM must not block.
// playback.Player implements it.
type TTSSink interface {
	PushPCM(responseID uint32, pcmLE []byte) error
	EndResponse(responseID uint32)
	// Interrupt flushes responseID and everything before it (0: all) and
	// returns the response id it cut up to.
	Interrupt(responseID uint32) uint32
	// ResetSession is called when a new session starts (response ids
	// restart), before the session's read pump runs.
	ResetSession()
}

// ControlHandler receives gateway control messages (asr, llm/vlm text,
// skills, arbiter decisions, keyframe requests, errors...) on the control
// goroutine, one at a time, in arrival order.
type ControlHandler interface {
	HandleControl(ctx context.Context, m protocol.Message)
}

// LinkObserver is told when a session starts (up) and ends (down).
type LinkObserver interface {
	LinkChanged(up bool, sessionID string)
}

// Config configures a Client.
type Config struct {
	URL   string // ws:// or wss:// URL of the gateway's /v1/robot endpoint
	Token string // bearer token; empty: no Authorization header
	// TLS configures wss:// (private CA, client certificate for mutual
	// TLS, server name); nil: system roots and the URL's host.
	TLS *tls.Config
	// AllowInsecureWS permits plain ws:// to a non-loopback host (LAN
	// development gateways only).
	AllowInsecureWS bool
	DeviceID        string
	Hello           protocol.RobotHello // agent_meta; Protocol/DeviceID filled in

	HandshakeTimeout  time.Duration // dial + hello exchange; default 5 s
	WriteTimeout      time.Duration // per write; default 5 s
	BackoffBase       time.Duration // default 500 ms
	BackoffCap        time.Duration // default 30 s
	BackoffReset      time.Duration // a session this long did not fail early: backoff resets (3.7); default 10 s
	BackoffFastCap    time.Duration // delay cap for BackoffFastWindow after such a session; default 1 s
	BackoffFastWindow time.Duration // default 30 s
	DefaultKeepalive  protocol.Keepalive

	MicQueue    int // mic frames buffered (lossless-bounded); default 100 (2 s of 20 ms)
	VideoQueue  int // video frames buffered (lossy); default 4
	VideoMax    int // largest encoded video frame in bytes; default 512 KiB
	MicFrameMax int // max samples per mic frame; default 960 (60 ms)
	OutboxLimit int // unacked control messages; default 10000
	AnswerQueue int // acks/errors to gateway messages waiting to be written before the read pump pauses; default 16384
	// Spool, if set, makes the control lane durable (see Outbox.SetSpool).
	Spool        Spool
	EventPrefix  string
	DrainTimeout time.Duration // on shutdown, time to flush queued frames; default 2 s
	// Codecs, if set, offers compressed audio in hello (codec.go); nil
	// means PCM only.
	Codecs *AudioCodecs
	// Heartbeat, if set, is called at least every second while the
	// client's loops are healthy — connected or backing off — for the
	// service watchdog. It must not block.
	Heartbeat func()
	// Tap, if set, sees every control (text) message on the wire (tap.go).
	Tap ControlTap
}

func (c *Config) defaults() {
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = 500 * time.Millisecond
	}
	if c.BackoffCap <= 0 {
		c.BackoffCap = 30 * time.Second
	}
	if c.BackoffReset <= 0 {
		c.BackoffReset = 10 * time.Second
	}
	if c.BackoffFastCap <= 0 {
		c.BackoffFastCap = time.Second
	}
	if c.BackoffFastWindow <= 0 {
		c.BackoffFastWindow = 30 * time.Second
	}
	if c.AnswerQueue <= 0 {
		c.AnswerQueue = 16384
	}
	if c.DefaultKeepalive.IntervalMS <= 0 {
		c.DefaultKeepalive.IntervalMS = 5000
	}
	if c.DefaultKeepalive.TimeoutMS <= 0 {
		c.DefaultKeepalive.TimeoutMS = 15000
	}
	if c.MicQueue <= 0 {
		c.MicQueue = 100
	}
	if c.VideoQueue <= 0 {
		c.VideoQueue = 4
	}
	if c.VideoMax <= 0 {
		c.VideoMax = 512 << 10
	}
	if c.MicFrameMax <= 0 {
		c.MicFrameMax = 960
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 2 * time.Second
	}
	if c.Heartbeat == nil {
		c.Heartbeat = func() {}
	}
	if c.EventPrefix == "" {
		c.EventPrefix = c.DeviceID
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("uplink: gateway url %q is not a ws:// or wss:// URL", c.URL)
	}
	if u.Scheme == "ws" && !isLoopback(u.Hostname()) && !c.AllowInsecureWS {
		return fmt.Errorf("uplink: gateway url %q uses plain ws:// to a non-loopback host; use wss://", c.URL)
	}
	if u.User != nil || u.Query().Has("token") {
		return fmt.Errorf("uplink: gateway url %q carries credentials; put the token in gateway.token_file", redact(u))
	}
	if c.DeviceID == "" {
		return fmt.Errorf("uplink: device id is empty")
	}
	if c.MicFrameMax > 16000 {
		return fmt.Errorf("uplink: mic frame max %d samples is over 1 s (16000 samples, §4.5)", c.MicFrameMax)
	}
	return nil
}

func redact(u *url.URL) string {
	v := *u
	v.User = nil
	v.RawQuery = ""
	return v.String()
}

// isLoopback reports whether host is "localhost" or a loopback IP address
// (127.0.0.0/8, ::1); a name like 127.example.com is not.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Client maintains the gateway session.
type Client struct {
	cfg     Config
	clk     clock.Clock
	log     *slog.Logger
	tts     TTSSink
	handler ControlHandler
	obs     []LinkObserver

	outbox *Outbox
	mic    *frameLane
	video  *frameLane

	wake      chan struct{}
	ephemeral chan []byte // acks, errors, progress: not resent
	control   *controlQueue

	answers   *answerQueue // acks and errors that settle gateway messages: never dropped
	seen      *dedup       // read pump only
	sessionUp time.Time    // Run goroutine: when the current session reached hello (monoTime)

	lastRefused uint32       // read pump only: last response whose audio was refused
	errLimit    errorLimiter // read pump only: §9.1 error reply rate limit

	// audio is the session's negotiated audio (set before the pumps
	// start); micEnc the write pump's encoder (codec.go).
	audio  protocol.SessionAudio
	micEnc micCodec

	up        atomic.Bool
	sessionID atomic.Value // string
	drainReq  atomic.Bool

	m        clientMetrics
	rejected *rejectCounters
	// micSendLatency: mic frame end → written to the WebSocket (tap.go).
	micSendLatency *metrics.Histogram
}

type clientMetrics struct {
	connects, disconnects, dialErrors        *metrics.Counter
	micSent, micDropped, micQueued           *metrics.Counter
	videoSent, videoDropped, videoQueued     *metrics.Counter
	controlSent, ephemeralDropped            *metrics.Counter
	badFrames, badMessages, unknownTypes     *metrics.Counter
	gatewayErrors, ttsBytes, staleTTS        *metrics.Counter
	micBytes                                 *metrics.Counter
	keepaliveTimeouts, pings, goAways, dupes *metrics.Counter
	errorsSuppressed, replaced, staleDropped *metrics.Counter
	handshakeFailures                        *metrics.Counter
	answersSent, answersDiscarded            *metrics.Counter
	linkUp                                   *metrics.Gauge
}

// New returns a client. tts and handler may be nil (audio and control
// messages are then counted and dropped with a log line).
func New(cfg Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger, tts TTSSink, handler ControlHandler) (*Client, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	c := &Client{
		cfg: cfg, clk: clk, log: log, tts: tts, handler: handler,
		wake:      make(chan struct{}, 1),
		ephemeral: make(chan []byte, 256),
		control:   newControlQueue(),
		answers:   newAnswerQueue(cfg.AnswerQueue),
		seen:      newDedup(4096),
	}
	c.m = clientMetrics{
		connects:          reg.Counter("robot_agent_uplink_connects_total", "Sessions established with the gateway."),
		disconnects:       reg.Counter("robot_agent_uplink_disconnects_total", "Sessions that ended."),
		dialErrors:        reg.Counter("robot_agent_uplink_dial_errors_total", "Failed connection attempts."),
		micSent:           reg.Counter("robot_agent_uplink_mic_frames_sent_total", "Mic frames written to the WebSocket."),
		micDropped:        reg.Counter("robot_agent_uplink_mic_frames_dropped_total", "Mic frames dropped because the lane was full."),
		micQueued:         reg.Counter("robot_agent_uplink_mic_frames_queued_total", "Mic frames accepted into the lane."),
		videoSent:         reg.Counter("robot_agent_uplink_video_frames_sent_total", "Video frames written to the WebSocket."),
		videoDropped:      reg.Counter("robot_agent_uplink_video_frames_dropped_total", "Video frames dropped by the lossy lane."),
		videoQueued:       reg.Counter("robot_agent_uplink_video_frames_queued_total", "Video frames accepted into the lane."),
		controlSent:       reg.Counter("robot_agent_uplink_control_sent_total", "Control messages written (including resends)."),
		ephemeralDropped:  reg.Counter("robot_agent_uplink_ephemeral_dropped_total", "Acks/progress messages dropped because their queue was full."),
		badFrames:         reg.Counter("robot_agent_uplink_bad_frames_total", "Binary messages from the gateway rejected."),
		badMessages:       reg.Counter("robot_agent_uplink_bad_messages_total", "JSON messages from the gateway rejected."),
		unknownTypes:      reg.Counter("robot_agent_uplink_unknown_types_total", "Control messages of unknown type from the gateway."),
		gatewayErrors:     reg.Counter("robot_agent_uplink_gateway_errors_total", "Error messages received from the gateway."),
		ttsBytes:          reg.Counter("robot_agent_uplink_tts_bytes_total", "TTS PCM bytes received."),
		staleTTS:          reg.Counter("robot_agent_uplink_tts_rejected_total", "TTS chunks the jitter buffer refused."),
		keepaliveTimeouts: reg.Counter("robot_agent_uplink_keepalive_timeouts_total", "Sessions ended by the keepalive timeout."),
		pings:             reg.Counter("robot_agent_uplink_pings_total", "Pings sent."),
		goAways:           reg.Counter("robot_agent_uplink_go_aways_total", "go_away messages received."),
		dupes:             reg.Counter("robot_agent_uplink_duplicate_events_total", "Gateway control messages received twice (acked, not handled again)."),
		micBytes:          reg.Counter("robot_agent_uplink_mic_bytes_total", "Mic frame bytes written to the WebSocket (header included)."),
		answersSent:       reg.Counter("robot_agent_uplink_answers_sent_total", "Acks and errors answering reliable gateway messages written (never dropped)."),
		answersDiscarded:  reg.Counter("robot_agent_uplink_answers_discarded_total", "Answers left unsent when their session ended (the gateway re-sends or drops those messages per 3.5)."),
		linkUp:            reg.Gauge("robot_agent_uplink_up", "1 while a gateway session is established."),
		errorsSuppressed:  reg.Counter("robot_agent_uplink_error_replies_suppressed_total", "Error replies to bad gateway input not sent because of the error rate limit (§9.1)."),
		replaced:          reg.Counter("robot_agent_uplink_sessions_replaced_total", "Sessions the gateway closed with 4000 (another agent with this device id took over)."),
		staleDropped:      reg.Counter("robot_agent_uplink_stale_ephemeral_dropped_total", "Acks, errors and periodic progress of an ended connection not sent on the next one (§5.3)."),
		handshakeFailures: reg.Counter("robot_agent_uplink_handshake_failures_total", "Connections closed because the gateway hello was missing or bad (§3.1)."),
	}
	if cfg.Hello.BootID == "" {
		// §3.3: every event id is <boot_id>-<n>.
		cfg.Hello.BootID = NewBootID()
		c.cfg.Hello.BootID = cfg.Hello.BootID
	}
	prefix := cfg.Hello.BootID
	c.errLimit = errorLimiter{rate: errorReplyRate, burst: errorReplyBurst}
	c.outbox = NewOutbox(prefix, cfg.OutboxLimit, clk, reg)
	c.outbox.setLogger(log)
	if cfg.Spool != nil {
		if err := c.outbox.SetSpool(cfg.Spool); err != nil {
			return nil, err
		}
	}
	c.outbox.setWake(c.signal)
	c.rejected = newRejectCounters(reg)
	c.mic = newFrameLane(cfg.MicQueue, protocol.HeaderSize+2*cfg.MicFrameMax, c.m.micDropped, c.m.micQueued)
	c.video = newFrameLane(cfg.VideoQueue, protocol.HeaderSize+cfg.VideoMax, c.m.videoDropped, c.m.videoQueued)
	c.sessionID.Store("")
	c.micSendLatency = reg.Histogram(MicSendLatencyMetric, "Mic frame end (capture clock) to the frame written to the WebSocket, in seconds.", nil)
	c.audio = protocol.PCMAudio(cfg.Hello.AudioUp.FrameMS)
	c.micEnc.errors = reg.Counter("robot_agent_uplink_mic_encode_errors_total", "Mic frames the codec failed to encode (not sent).")
	return c, nil
}

// Outbox returns the control lane. Its Emit method is what state modules,
// the recogniser and skills use.
func (c *Client) Outbox() *Outbox { return c.outbox }

// Emit queues a control message (see Outbox.Emit).
func (c *Client) Emit(m protocol.Message) error { return c.outbox.Emit(m) }

// EmitID queues a control message and returns its event_id, taken from the
// same <boot_id>-<n> counter as every other event (§3.3).
func (c *Client) EmitID(m protocol.Message) (string, error) { return c.outbox.EmitID(m) }

// SetCapabilities sets the capability strings of the hello (§6.1): what
// this robot really sends and plays, known once its parts are built. Call
// before Run.
func (c *Client) SetCapabilities(caps []string) {
	c.cfg.Hello.Capabilities = append([]string(nil), caps...)
}

// BootID returns the boot id sent in the hello and used as the event id
// prefix.
func (c *Client) BootID() string { return c.cfg.Hello.BootID }

// AddObserver registers a link observer. Call before Run.
func (c *Client) AddObserver(o LinkObserver) { c.obs = append(c.obs, o) }

// Up reports whether a session is established.
func (c *Client) Up() bool { return c.up.Load() }

// SendMic queues one mic frame on the fast lane. It never blocks and never
// allocates; it returns false when the frame was dropped (lane full). Only
// the capture pump may call it. It implements capture.FrameSink.
func (c *Client) SendMic(f *capture.Frame) bool {
	ok := c.mic.pushPCM(protocol.Header{
		Kind: protocol.KindMicAudio, Flag: f.Flag, Stream: f.Utterance, Seq: f.Seq,
		Timestamp: f.TS.Microseconds(),
	}, f.Samples)
	c.signal()
	return ok
}

// SendVideo queues an encoded video frame (flag 2 H264 or 3 image) on the
// lossy video lane. It never blocks: when the lane is full (the link is
// slower than the video) it returns false and counts a drop; the video
// pipeline then skips to the next key frame. Only one producer goroutine may
// call it. The write pump interleaves at most one video frame between
// checks of the mic lane, so audio waits at most one video frame's
// transmission time.
func (c *Client) SendVideo(h protocol.Header, payload []byte) bool {
	h.Kind = protocol.KindVideo
	ok := c.video.pushBytes(h, payload)
	c.signal()
	return ok
}

// VideoQueueDepth returns how many video frames wait in the lane; the
// video pipeline resumes after a drop once it is 0.
func (c *Client) VideoQueueDepth() int { return c.video.depth() }

// SendEphemeral queues a control message that is not acked nor resent
// (periodic playback progress). It never blocks; when the small queue is
// full the message is dropped and counted.
func (c *Client) SendEphemeral(m protocol.Message) {
	env := m.Envelope()
	if env.TS == 0 {
		env.TS = c.clk.Mono().Microseconds()
	}
	if !c.up.Load() {
		// §5.3: periodic messages are about the connection they were made
		// for; nothing queued while the link is down is sent later.
		c.m.staleDropped.Inc()
		return
	}
	data, err := protocol.Marshal(m)
	if err != nil {
		c.log.Error("uplink: encode ephemeral message", "type", env.Type, "err", err)
		return
	}
	c.queueEphemeral(data)
}

// discardStaleEphemeral drops acks, errors and periodic progress queued for
// a connection that has ended (§5.3): they are not flushed into the next
// one as a burst. Called between connections, when the write pump is not
// running.
func (c *Client) discardStaleEphemeral() {
	for {
		select {
		case <-c.ephemeral:
			c.m.staleDropped.Inc()
		default:
			return
		}
	}
}

func (c *Client) queueEphemeral(data []byte) {
	select {
	case c.ephemeral <- data:
		c.signal()
	default:
		c.m.ephemeralDropped.Inc()
	}
}

// signal wakes the write pump. A non-blocking send on a 1-buffered channel:
// it never blocks or allocates, but it does take the channel's internal
// lock for a moment — the only lock on the mic fast lane.
func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run connects and keeps the session up until ctx is done, reconnecting with
// exponential backoff and full jitter. On ctx cancellation it drains queued
// frames and control messages (up to DrainTimeout), sends a close frame and
// returns nil.
func (c *Client) Run(ctx context.Context) error {
	go c.controlLoop(ctx)
	bo := reconnectBackoff{base: c.cfg.BackoffBase, cap: c.cfg.BackoffCap, stable: c.cfg.BackoffReset,
		fastCap: c.cfg.BackoffFastCap, fastWindow: c.cfg.BackoffFastWindow}
	for {
		if ctx.Err() != nil {
			return nil
		}
		established, err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var after time.Duration
		var ga *goAwayError
		if errors.As(err, &ga) {
			after = ga.after
		}
		now := monoTime(c.clk)
		var lasted time.Duration
		if established {
			lasted = now.Sub(c.sessionUp)
		}
		d := bo.next(now, established, lasted, after)
		if established {
			c.log.Warn("uplink: session ended, reconnecting", "err", err, "retry_in", d.Round(time.Millisecond))
		} else {
			c.log.Warn("uplink: cannot connect to the gateway, retrying", "err", err, "retry_in", d.Round(time.Millisecond))
		}
		if !c.wait(ctx, d) {
			return nil
		}
	}
}

// wait sleeps d on the client's clock, beating the heartbeat every second;
// it returns false if ctx ended first.
func (c *Client) wait(ctx context.Context, d time.Duration) bool {
	t := c.clk.NewTimer(d)
	defer t.Stop()
	beat := time.NewTicker(time.Second)
	defer beat.Stop()
	for {
		c.cfg.Heartbeat()
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
			return true
		case <-beat.C:
		}
	}
}

type goAwayError struct {
	reason string
	after  time.Duration
}

func (e *goAwayError) Error() string {
	return fmt.Sprintf("uplink: gateway sent go_away (%s), reconnect after %v", e.reason, e.after)
}

// notSentLowat is the most bytes the kernel may hold unsent on the uplink
// socket (see limitUnsent): about 0.1 s of video at 1.3 Mbit/s, so audio
// never queues behind seconds of video inside the kernel.
const notSentLowat = 16 << 10

func (c *Client) dial(ctx context.Context) (*websocket.Conn, error) {
	nd := &net.Dialer{Control: limitUnsent}
	d := websocket.Dialer{
		NetDialContext:   nd.DialContext,
		Subprotocols:     []string{protocol.Subprotocol},
		HandshakeTimeout: c.cfg.HandshakeTimeout,
		Proxy:            http.ProxyFromEnvironment,
		TLSClientConfig:  c.cfg.TLS,
		ReadBufferSize:   16 << 10,
		WriteBufferSize:  16 << 10,
	}
	h := http.Header{}
	if c.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	h.Set("X-Robot-Device-Id", c.cfg.DeviceID)
	conn, resp, err := d.DialContext(ctx, c.cfg.URL, h)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			if c.cfg.Token == "" {
				return nil, fmt.Errorf("%w: HTTP %d: the gateway asks for a token and none is configured (set gateway.token_file)", ErrUnauthorized, resp.StatusCode)
			}
			return nil, fmt.Errorf("%w: HTTP %d", ErrUnauthorized, resp.StatusCode)
		}
		if resp != nil {
			return nil, fmt.Errorf("uplink: dial %s: %w (HTTP %d)", c.cfg.URL, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("uplink: dial %s: %w", c.cfg.URL, err)
	}
	if conn.Subprotocol() != protocol.Subprotocol {
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseProtocolError, "subprotocol "+protocol.Subprotocol+" required"), time.Now().Add(time.Second))
		conn.Close()
		return nil, fmt.Errorf("%w: gateway answered subprotocol %q, want %q", ErrHandshake, conn.Subprotocol(), protocol.Subprotocol)
	}
	return conn, nil
}

// handshakeError is a failed hello exchange and the close code the robot
// sends for it (§3.1): 1008 when no gateway hello came in time, 1002 for a
// bad one.
type handshakeError struct {
	code   int
	reason string // close reason, ≤ 123 bytes
	err    error
}

func (e *handshakeError) Error() string { return e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

func badHello(code int, reason string, format string, args ...any) *handshakeError {
	// A close reason is valid UTF-8 of at most 123 bytes (RFC 6455).
	reason = strings.ToValidUTF8(reason, "?")
	for len(reason) > 123 {
		_, n := utf8.DecodeLastRuneInString(reason)
		reason = reason[:len(reason)-n]
	}
	return &handshakeError{code: code, reason: reason, err: fmt.Errorf("%w: "+format, append([]any{ErrHandshake}, args...)...)}
}

// robotHello is the hello this client sends: the configured one with the
// protocol fields and the v1.1 audio offer filled in.
func (c *Client) robotHello() protocol.RobotHello {
	hello := c.cfg.Hello
	hello.Type = protocol.TypeHello
	hello.Protocol = protocol.Version
	hello.Minor = protocol.MinorVersion
	hello.DeviceID = c.cfg.DeviceID
	if hello.AudioUp.Format == "" {
		hello.AudioUp = protocol.AudioParams{Format: protocol.FormatPCM16LE, SampleRate: 16000, Channels: 1, FrameMS: 20}
	}
	if len(hello.AudioDown) == 0 {
		hello.AudioDown = []protocol.AudioParams{{Format: protocol.FormatPCM16LE, SampleRate: 24000, Channels: 1}}
	}
	if hello.Audio == nil {
		// The configured codecs first (most preferred), then PCM.
		hello.Audio = c.audioOffer(&hello)
	}
	return hello
}

// handshake sends the robot hello and waits for the gateway hello. It
// returns the negotiated session parameters (§3.9).
func (c *Client) handshake(conn *websocket.Conn) (*protocol.GatewayHello, protocol.Negotiated, error) {
	var neg protocol.Negotiated
	hello := c.robotHello()
	hello.TS = c.clk.Mono().Microseconds()
	if s, _ := c.sessionID.Load().(string); s != "" {
		hello.ResumeSession = s
	}
	data, err := protocol.Marshal(&hello)
	if err != nil {
		return nil, neg, fmt.Errorf("%w: encode hello: %v", ErrHandshake, err)
	}
	deadline := time.Now().Add(c.cfg.HandshakeTimeout)
	conn.SetWriteDeadline(deadline)
	if err := conn.WriteMessage(websocket.TextMessage, data); err != nil {
		return nil, neg, fmt.Errorf("%w: send hello: %v", ErrHandshake, err)
	}
	c.tap(true, data)
	conn.SetReadDeadline(deadline)
	conn.SetReadLimit(protocol.MaxControl)
	mt, msg, err := conn.ReadMessage()
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, neg, badHello(websocket.ClosePolicyViolation, "no gateway hello within "+c.cfg.HandshakeTimeout.String(), "no gateway hello within %v", c.cfg.HandshakeTimeout)
		}
		return nil, neg, fmt.Errorf("%w: waiting for gateway hello: %v", ErrHandshake, err)
	}
	if mt != websocket.TextMessage {
		return nil, neg, badHello(websocket.CloseProtocolError, "bad gateway hello: first message is binary", "first gateway message is binary, want hello")
	}
	c.tap(false, msg)
	m, err := protocol.DecodeFromGateway(msg)
	if err != nil {
		return nil, neg, badHello(websocket.CloseProtocolError, "bad gateway hello: "+err.Error(), "%v", err)
	}
	gh, ok := m.(*protocol.GatewayHello)
	if !ok {
		if e, ok := m.(*protocol.Error); ok {
			return nil, neg, badHello(websocket.CloseProtocolError, "gateway error "+e.Code+" before hello", "gateway error %s: %s", e.Code, e.Msg)
		}
		return nil, neg, badHello(websocket.CloseProtocolError, "bad gateway hello: first message is "+m.Envelope().Type, "first gateway message is %q, want hello", m.Envelope().Type)
	}
	neg, err = protocol.Negotiate(&hello, gh, c.cfg.DefaultKeepalive)
	if err == nil {
		// The formats and their codec parameters (§17); a codec the robot
		// did not offer is a bad hello like any other.
		err = c.negotiate(&hello, gh)
	}
	if err != nil {
		return nil, neg, badHello(websocket.CloseProtocolError, "bad gateway hello: "+err.Error(), "%v", err)
	}
	return gh, neg, nil
}

// session runs one connection from dial to close; established reports
// whether it got past the hello exchange (a session that started).
func (c *Client) session(ctx context.Context) (established bool, err error) {
	conn, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.m.dialErrors.Inc()
		}
		return false, err
	}
	defer conn.Close()
	gh, neg, err := c.handshake(conn)
	if err != nil {
		if ctx.Err() == nil {
			c.m.dialErrors.Inc()
		}
		// §3.1: no error message during the handshake; a close frame whose
		// code and reason say what was wrong.
		code, reason := websocket.CloseProtocolError, "handshake failed"
		var he *handshakeError
		if errors.As(err, &he) {
			code, reason = he.code, he.reason
			c.m.handshakeFailures.Inc()
		}
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
		drainAfterClose(ctx, conn, time.Second)
		return false, err
	}
	// §3.6: each keepalive field defaults on its own.
	ka := neg.Keepalive
	timeout := time.Duration(ka.TimeoutMS) * time.Millisecond
	c.sessionID.Store(gh.SessionID)
	c.sessionUp = monoTime(c.clk)
	c.seen.begin(gh.SessionID, gh.Resumed)
	c.answers.begin()
	c.discardStaleEphemeral()
	c.outbox.rewind()
	// Video queued for the old connection is stale; the video pipeline
	// starts every session with a key frame. (The write pump, the lane's
	// only consumer, is not running between sessions.)
	c.video.head.Store(c.video.tail.Load())
	if c.tts != nil {
		// Response ids restart per session: nothing buffered from the old
		// session may play into the new one.
		c.tts.ResetSession()
	}
	c.up.Store(true)
	c.m.linkUp.Set(1)
	c.m.connects.Inc()
	c.log.Info("uplink: session established", "session", gh.SessionID, "resumed", gh.Resumed, "protocol_minor", neg.Minor, "gateway_capabilities", gh.Capabilities, "keepalive_ms", ka.IntervalMS, "keepalive_timeout_ms", ka.TimeoutMS, "pending_control", c.outbox.Len())
	for _, o := range c.obs {
		o.LinkChanged(true, gh.SessionID)
	}
	defer func() {
		c.up.Store(false)
		c.m.linkUp.Set(0)
		c.m.disconnects.Inc()
		for _, o := range c.obs {
			o.LinkChanged(false, gh.SessionID)
		}
	}()

	// Over-class messages up to the hard limit are rejected one by one and
	// the session continues; beyond it gorilla closes the connection (1009).
	conn.SetReadLimit(protocol.MaxDownlinkHard)
	conn.SetReadDeadline(time.Now().Add(timeout))
	conn.SetPongHandler(func(string) error {
		conn.SetReadDeadline(time.Now().Add(timeout))
		return nil
	})
	readErr := make(chan error, 1)
	readDone := make(chan struct{})
	go func() { defer close(readDone); readErr <- c.readPump(ctx, conn, timeout) }()
	werr := c.writePump(ctx, conn, time.Duration(ka.IntervalMS)*time.Millisecond, readErr)
	conn.Close()
	if n := c.answers.len(); n > 0 {
		c.m.answersDiscarded.Add(int64(n))
	}
	c.answers.end() // a read pump waiting for answer space returns
	// The read pump is the jitter buffer's only producer: it must be gone
	// before the next session resets the buffer.
	<-readDone
	return true, werr
}

// writePump is the only goroutine that writes to conn.
func (c *Client) writePump(ctx context.Context, conn *websocket.Conn, pingEvery time.Duration, readErr <-chan error) error {
	// Network deadlines and pings run on wall time (the socket's clock);
	// the injected clock drives timestamps and reconnect backoff.
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	beat := time.NewTicker(time.Second)
	defer beat.Stop()
	write := func(mt int, data []byte) error {
		conn.SetWriteDeadline(time.Now().Add(c.cfg.WriteTimeout))
		if mt == websocket.TextMessage {
			c.tap(true, data)
		}
		return conn.WriteMessage(mt, data)
	}
	for {
		if err := c.flushQueues(write); err != nil {
			return fmt.Errorf("uplink: write: %w", err)
		}
		c.cfg.Heartbeat()
		select {
		case <-beat.C:
		case <-ctx.Done():
			return c.closeGracefully(conn, write, readErr)
		case err := <-readErr:
			var ka keepaliveError
			if errors.As(err, &ka) {
				c.m.keepaliveTimeouts.Inc()
			}
			var rl readLimitError
			if errors.As(err, &rl) {
				// gorilla has already sent close 1009 (§2.4). Keep reading
				// (and discarding) until the gateway answers or 1 s passes,
				// so the close frame is not lost to a TCP reset while the
				// gateway is still sending the oversized message.
				drainAfterClose(ctx, conn, time.Second)
				return err
			}
			var cr *closeReceived
			if errors.As(err, &cr) {
				// gorilla has echoed the gateway's close frame.
				return err
			}
			// Tell the gateway why, if the socket still works.
			code, text := websocket.CloseGoingAway, "read failed"
			var ga *goAwayError
			if errors.As(err, &ga) {
				code, text = websocket.CloseNormalClosure, "go_away"
				// The go_away's ack (and any other answer) goes out
				// before the close frame.
				for _, data := range c.answers.take(nil) {
					if write(websocket.TextMessage, data) != nil {
						break
					}
					c.m.answersSent.Inc()
				}
			}
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
			if ga != nil {
				drainAfterClose(ctx, conn, time.Second)
			}
			return err
		case <-ping.C:
			c.m.pings.Inc()
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.cfg.WriteTimeout)); err != nil {
				return fmt.Errorf("uplink: ping: %w", err)
			}
		case <-c.wake:
		}
	}
}

// flushQueues writes everything queued, in priority order: acks/progress,
// mic audio, control messages, video.
func (c *Client) flushQueues(write func(int, []byte) error) error {
	var answers [][]byte
	for {
		progressed := false
		answers = c.answers.take(answers)
		for i, data := range answers {
			if err := write(websocket.TextMessage, data); err != nil {
				// Unsent answers die with the connection (3.5).
				c.m.answersDiscarded.Add(int64(len(answers) - i))
				return err
			}
			c.m.answersSent.Inc()
			progressed = true
		}
		for {
			select {
			case data := <-c.ephemeral:
				if err := write(websocket.TextMessage, data); err != nil {
					return err
				}
				progressed = true
				continue
			default:
			}
			break
		}
		for {
			f, ok := c.mic.peek()
			if !ok {
				break
			}
			if c.audio.UpOpus() {
				if f, ok = c.encodeMic(f); !ok {
					c.mic.release()
					continue
				}
			}
			if err := write(websocket.BinaryMessage, f); err != nil {
				return err
			}
			c.observeMicSent(f)
			c.m.micBytes.Add(int64(len(f)))
			c.mic.release()
			c.m.micSent.Inc()
			progressed = true
		}
		if data, ok := c.outbox.next(); ok {
			if err := write(websocket.TextMessage, data); err != nil {
				return err
			}
			c.m.controlSent.Inc()
			progressed = true
		}
		if f, ok := c.video.peek(); ok {
			if err := write(websocket.BinaryMessage, f); err != nil {
				return err
			}
			c.video.release()
			c.m.videoSent.Inc()
			progressed = true
		}
		if !progressed {
			return nil
		}
	}
}

// closeGracefully drains what is queued (bounded by DrainTimeout), waits
// briefly for outstanding acks, then sends the close frame.
func (c *Client) closeGracefully(conn *websocket.Conn, write func(int, []byte) error, readErr <-chan error) error {
	deadline := time.Now().Add(c.cfg.DrainTimeout)
	for time.Now().Before(deadline) {
		if err := c.flushQueues(write); err != nil {
			return nil
		}
		if c.outbox.Len() == 0 && c.mic.depth() == 0 && c.answers.len() == 0 {
			break
		}
		select {
		case <-readErr:
			return nil
		case <-c.wake:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if n := c.outbox.Len(); n > 0 {
		c.log.Warn("uplink: shutting down with unacknowledged control messages", "count", n)
	}
	conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "robot shutting down"), time.Now().Add(time.Second))
	select {
	case <-readErr:
	case <-time.After(time.Second):
	}
	return nil
}

type keepaliveError struct{ err error }

func (e keepaliveError) Error() string {
	return "uplink: no message from the gateway within the keepalive timeout: " + e.err.Error()
}
func (e keepaliveError) Unwrap() error { return e.err }

// readPump is the only goroutine that reads from conn.
func (c *Client) readPump(ctx context.Context, conn *websocket.Conn, timeout time.Duration) error {
	buf := make([]byte, 0, protocol.MaxDownlink)
	for {
		mt, r, err := conn.NextReader()
		if err != nil {
			return c.readError(err)
		}
		conn.SetReadDeadline(time.Now().Add(timeout))
		buf, err = readAll(r, buf[:0])
		if err != nil {
			return c.readError(err)
		}
		switch mt {
		case websocket.BinaryMessage:
			c.handleBinary(buf)
		case websocket.TextMessage:
			c.tap(false, buf)
			if err := c.handleText(ctx, buf); err != nil {
				return err
			}
		}
	}
}

// readError classifies why the read pump stopped.
func (c *Client) readError(err error) error {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return keepaliveError{err}
	}
	if errors.Is(err, websocket.ErrReadLimit) {
		c.log.Warn("uplink: gateway message over the read limit; closed with 1009", "limit", protocol.MaxDownlinkHard)
		return readLimitError{err}
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Code == protocol.CloseSessionReplaced {
			// §2.5: loud, counted, then the normal reconnect.
			c.m.replaced.Inc()
			c.log.Error("uplink: SESSION REPLACED (close 4000): another agent is connected with this device id; two agents sharing a device id keep displacing each other",
				"device_id", c.cfg.DeviceID, "boot_id", c.cfg.Hello.BootID, "reason", ce.Text)
		}
		return &closeReceived{code: ce.Code, text: ce.Text}
	}
	return fmt.Errorf("uplink: read: %w", err)
}

type readLimitError struct{ err error }

func (e readLimitError) Error() string {
	return fmt.Sprintf("uplink: gateway message over the %d-byte read limit (closed with 1009)", protocol.MaxDownlinkHard)
}
func (e readLimitError) Unwrap() error { return e.err }

// closeReceived is a close frame from the gateway.
type closeReceived struct {
	code int
	text string
}

func (e *closeReceived) Error() string {
	return fmt.Sprintf("uplink: gateway closed the connection (%d %q)", e.code, e.text)
}

// drainAfterClose reads and discards whatever the peer still sends after
// our close frame, until it closes the TCP connection, nothing arrives for
// idle, or 10·idle passes. Closing a socket with unread data makes the
// kernel reset the connection, and the peer may then lose our close frame.
// Only call it once the read pump has stopped.
// It returns at once when ctx ends (shutdown).
func drainAfterClose(ctx context.Context, conn *websocket.Conn, idle time.Duration) {
	nc := conn.UnderlyingConn()
	if ctx.Err() != nil {
		return
	}
	var stopped atomic.Bool
	stop := context.AfterFunc(ctx, func() { stopped.Store(true); nc.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 32<<10)
	end := time.Now().Add(10 * idle)
	for time.Now().Before(end) && !stopped.Load() {
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

// readAll reads r into buf without allocating when buf is large enough.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (c *Client) handleBinary(msg []byte) {
	h, payload, err := c.audio.ParseFrame(msg)
	if err == nil && h.Kind != protocol.KindTTSAudio {
		err = fmt.Errorf("%w: %s frames are robot → gateway only", protocol.ErrUnsupported, h.Kind)
	}
	if err != nil {
		c.m.badFrames.Inc()
		c.log.Warn("uplink: rejected binary frame from gateway", "err", err)
		c.sendError(protocol.FrameErrorCode(err), err.Error(), "")
		return
	}
	c.m.ttsBytes.Add(int64(len(payload)))
	if c.tts == nil {
		return
	}
	if len(payload) > 0 && c.audio.DownOpus() {
		c.pushTTSPacket(h, payload)
	} else if len(payload) > 0 {
		c.pushTTS(h.Stream, payload)
	}
	if h.Flag == protocol.FlagTTSLast {
		c.tts.EndResponse(h.Stream)
	}
}

// pushTTS hands audio to the jitter buffer. A refused chunk is counted; the
// first refusal per response is reported to the gateway (stale_response for
// interrupted or finished responses), so a misbehaving gateway hears about
// it once, not per chunk. Read pump only.
func (c *Client) pushTTS(id uint32, pcm []byte) {
	c.refused(id, c.tts.PushPCM(id, pcm))
}

// refused counts and reports (once per response) audio the sink refused.
func (c *Client) refused(id uint32, err error) {
	if err == nil {
		return
	}
	c.m.staleTTS.Inc()
	if id == c.lastRefused {
		return
	}
	c.lastRefused = id
	code := protocol.CodeBadFrame
	switch {
	case errors.Is(err, playback.ErrStale):
		code = protocol.CodeStaleResponse
	case errors.Is(err, playback.ErrFull):
		code = protocol.CodeBufferOverflow
	}
	c.log.Info("uplink: TTS audio refused", "response", id, "err", err)
	c.sendError(code, fmt.Sprintf("uplink: tts audio for response %d dropped: %v", id, err), "")
}

func (c *Client) handleText(ctx context.Context, msg []byte) error {
	m, err := protocol.DecodeFromGateway(msg)
	if err != nil {
		// §9.1: the ref is the message's event_id whenever it has one,
		// whatever else is wrong (no type included), so the error settles
		// it.
		ref := protocol.RefOf(msg)
		if errors.Is(err, protocol.ErrUnknownType) {
			c.m.unknownTypes.Inc()
		} else {
			c.m.badMessages.Inc()
		}
		c.log.Warn("uplink: rejected control message from gateway", "err", err, "ref", ref)
		c.sendError(protocol.ErrorCode(err), err.Error(), ref)
		// A message with an event_id that we could not parse is still
		// acknowledged as received-and-rejected so the gateway does not
		// resend it forever; the error above carries the reason.
		return nil
	}
	env := m.Envelope()
	switch v := m.(type) {
	case *protocol.Ack:
		c.outbox.Ack(v.EventID)
		return nil
	case *protocol.TTS:
		c.m.ttsBytes.Add(int64(len(v.Audio)))
		if c.tts != nil {
			if len(v.Audio) > 0 {
				c.pushTTS(v.ResponseID, v.Audio)
			}
			if v.Last {
				c.tts.EndResponse(v.ResponseID)
			}
		}
	case *protocol.TTSDone:
		if c.tts != nil {
			c.tts.EndResponse(v.ResponseID)
		}
	case *protocol.Interrupt:
		// Barge-in is handled right here on the read pump, before any
		// later audio frame is read: O(1) flush.
		if c.tts != nil {
			c.tts.Interrupt(v.ResponseID)
		}
	case *protocol.GoAway:
		c.m.goAways.Inc()
		c.ack(env.EventID)
		return &goAwayError{reason: v.Reason, after: time.Duration(v.ReconnectAfterMS) * time.Millisecond}
	case *protocol.Error:
		c.m.gatewayErrors.Inc()
		if v.Ref != "" && c.outbox.Settle(v.Ref, v.Code) {
			// An error with ref settles our event (5.3): never re-sent.
			c.rejected.inc(v.Code)
			c.log.Warn("uplink: gateway rejected a control event", "code", v.Code, "msg", v.Msg, "ref", v.Ref)
		} else {
			c.log.Warn("uplink: gateway reported an error", "code", v.Code, "msg", v.Msg, "ref", v.Ref)
		}
	case *protocol.GatewayHello:
		c.m.badMessages.Inc()
		c.log.Warn("uplink: unexpected second hello from gateway; ignored")
		return nil
	}
	if env.EventID != "" {
		c.ack(env.EventID)
		if c.seen.seen(env.EventID) {
			c.m.dupes.Inc()
			return nil
		}
	}
	c.control.push(m)
	return nil
}

func (c *Client) ack(id string) {
	if id == "" {
		return
	}
	data, _ := protocol.Marshal(&protocol.Ack{Meta: protocol.Meta{Type: protocol.TypeAck, EventID: id}})
	c.answers.push(data, c.signal)
}

// sendError answers bad gateway input (read pump only). Errors without a
// ref are rate limited (§9.1): beyond errorReplyRate per second they are
// only counted. An error with a ref settles a reliable message and is
// always sent.
func (c *Client) sendError(code, msg, ref string) {
	if ref == "" && !c.errLimit.allow(c.clk.Now()) {
		c.m.errorsSuppressed.Inc()
		return
	}
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	data, _ := protocol.Marshal(&protocol.Error{Meta: protocol.Meta{Type: protocol.TypeError, TS: c.clk.Mono().Microseconds()}, Code: code, Msg: msg, Ref: ref})
	if ref != "" {
		// It settles a gateway message: an answer, never dropped.
		c.answers.push(data, c.signal)
		return
	}
	c.queueEphemeral(data)
}

// controlLoop hands gateway control messages to the handler, in order.
func (c *Client) controlLoop(ctx context.Context) {
	for {
		m, ok := c.control.pop(ctx)
		if !ok {
			return
		}
		if c.handler != nil {
			c.handler.HandleControl(ctx, m)
		}
	}
}

// controlQueue is an unbounded FIFO between the read pump and the control
// goroutine, so that a slow handler never stalls downlink audio and no
// control message is dropped.
type controlQueue struct {
	mu    sync.Mutex
	items []protocol.Message
	ready chan struct{}
}

func newControlQueue() *controlQueue { return &controlQueue{ready: make(chan struct{}, 1)} }

func (q *controlQueue) push(m protocol.Message) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *controlQueue) pop(ctx context.Context) (protocol.Message, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			m := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.mu.Unlock()
			return m, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, false
		case <-q.ready:
		}
	}
}

// Error reply rate limit (§9.1): a burst of errorReplyBurst, then
// errorReplyRate per second.
const (
	errorReplyRate  = 10
	errorReplyBurst = 10
)

// errorLimiter is a token bucket. Read pump only.
type errorLimiter struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

func (l *errorLimiter) allow(now time.Time) bool {
	if l.last.IsZero() {
		l.tokens = l.burst
	} else if el := now.Sub(l.last).Seconds(); el > 0 {
		l.tokens = min(l.burst, l.tokens+el*l.rate)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// NewBootID returns a boot id: 128 random bits as 32 lowercase hex digits
// (§3.3).
func NewBootID() string {
	var b [16]byte
	crand.Read(b[:]) // never fails (Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}
