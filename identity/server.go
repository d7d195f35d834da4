// Package identity accepts face and voiceprint recognition results from the
// robot's recogniser (a separate local process) and turns them into
// face_info and greet_signal control events.
//
// The recogniser writes one JSON Observation per line to a Unix socket
// and/or POSTs lines to a loopback HTTP endpoint. Every line gets a reply
// line, {"ok":true} or {"ok":false,"code":"bad_message","error":"..."}: bad
// lines are refused with an error naming the field and value, counted per
// kind (robot_agent_identity_rejected_<code>_total) and logged once per kind.
// Valid observations are stamped with the clock's Mono on arrival (their
// capture time), de-duplicated and tracked by a Tracker.
//
// Greeting responses the gateway sends back (greet_vlm_delta text,
// greet_tts_delta audio) are not handled here: they arrive on the downlink
// and play through the normal playback path.
//
// # Concurrency
//
// Run owns the listeners and the tracker goroutine. SubmitLine may be
// called from any goroutine once Run has started.
package identity

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/device"
	"github.com/robot-agent/robot-agent/metrics"
)

type item struct {
	o  Observation
	at time.Duration
}

// replyTimeout bounds a reply write to a recogniser that does not read.
const replyTimeout = 100 * time.Millisecond

// maxHTTPBody bounds a POST body.
const maxHTTPBody = 64 << 10

// Server is the recogniser endpoint.
type Server struct {
	cfg     Config
	clk     clock.Clock
	log     *slog.Logger
	reg     *metrics.Registry
	tracker *Tracker
	queue   chan item

	accepted *metrics.Counter

	mu       sync.Mutex
	logged   map[string]bool
	tokens   float64
	tokensAt time.Duration
	unixLn   net.Listener
	httpLn   net.Listener
	conns    map[net.Conn]struct{}
}

// New returns a server emitting through emit.
func New(cfg Config, emit device.Emitter, deps device.Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.Defaults()
	deps = deps.WithDefaults()
	return &Server{
		cfg:      cfg,
		clk:      deps.Clock,
		log:      deps.Log,
		reg:      deps.Metrics,
		tracker:  NewTracker(cfg, emit, deps.Clock, deps.Log, deps.Metrics),
		queue:    make(chan item, 256),
		accepted: deps.Metrics.Counter("robot_agent_identity_observations_total", "Recogniser observations accepted."),
		logged:   map[string]bool{},
		tokens:   float64(cfg.MaxRate),
		conns:    map[net.Conn]struct{}{},
	}, nil
}

// Listen opens the configured listeners. Run calls it if it has not been
// called; calling it first lets the caller learn HTTPAddr before Run.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Socket != "" && s.unixLn == nil {
		if fi, err := os.Lstat(s.cfg.Socket); err == nil {
			if fi.Mode()&fs.ModeSocket == 0 {
				return fmt.Errorf("identity: socket path %s exists and is not a socket", s.cfg.Socket)
			}
			os.Remove(s.cfg.Socket) // stale socket from a previous run
		}
		ln, err := net.Listen("unix", s.cfg.Socket)
		if err != nil {
			return fmt.Errorf("identity: listen on %s: %w", s.cfg.Socket, err)
		}
		if err := os.Chmod(s.cfg.Socket, 0o660); err != nil {
			ln.Close()
			return fmt.Errorf("identity: chmod %s: %w", s.cfg.Socket, err)
		}
		s.unixLn = ln
	}
	if s.cfg.HTTP != "" && s.httpLn == nil {
		ln, err := net.Listen("tcp", s.cfg.HTTP)
		if err != nil {
			return fmt.Errorf("identity: listen on %s: %w", s.cfg.HTTP, err)
		}
		s.httpLn = ln
	}
	return nil
}

// HTTPAddr returns the HTTP listener's address ("" when disabled or not
// listening yet).
func (s *Server) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Run serves until ctx is done, then closes the listeners and connections.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	s.mu.Lock()
	unixLn, httpLn := s.unixLn, s.httpLn
	s.mu.Unlock()
	if unixLn != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.acceptLoop(unixLn, &wg) }()
	}
	var hs *http.Server
	if httpLn != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/observations", s.serveHTTP)
		hs = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: nil}
		wg.Add(1)
		go func() { defer wg.Done(); hs.Serve(httpLn) }()
	}
loop:
	for {
		select {
		case it := <-s.queue:
			s.tracker.Observe(it.o, it.at)
		case <-ctx.Done():
			break loop
		}
	}
	s.mu.Lock()
	if s.unixLn != nil {
		s.unixLn.Close()
		os.Remove(s.cfg.Socket)
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	if hs != nil {
		hs.Close()
	}
	wg.Wait()
	return nil
}

func (s *Server) acceptLoop(ln net.Listener, wg *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// serveConn reads JSON lines and answers each with a reply line.
func (s *Server) serveConn(c net.Conn) {
	br := bufio.NewReaderSize(c, s.cfg.MaxLine+1)
	replies := true
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Too long: refuse it and skip to the end of the line.
			n := len(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				n += len(line)
			}
			replies = s.reply(c, replies, s.refuse(fmt.Errorf("%w: line of %d+ bytes exceeds max_line %d", ErrTooLarge, n, s.cfg.MaxLine)))
			if err != nil {
				return
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			replies = s.reply(c, replies, s.SubmitLine(line))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("identity: connection", "err", err)
			}
			return
		}
	}
}

// reply writes one result line; after a write times out (the recogniser
// does not read replies) the connection gets no more replies.
func (s *Server) reply(c net.Conn, on bool, err error) bool {
	if !on {
		return false
	}
	c.SetWriteDeadline(time.Now().Add(replyTimeout))
	if _, werr := c.Write(resultLine(err)); werr != nil {
		s.reg.Counter("robot_agent_identity_reply_errors_total", "Replies the recogniser did not take.").Inc()
		return false
	}
	return true
}

func resultLine(err error) []byte {
	if err == nil {
		return []byte("{\"ok\":true}\n")
	}
	b := []byte(`{"ok":false,"code":`)
	b = strconv.AppendQuote(b, Code(err))
	b = append(b, `,"error":`...)
	b = strconv.AppendQuote(b, err.Error())
	return append(b, "}\n"...)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxHTTPBody+1))
	if err != nil {
		http.Error(w, "identity: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxHTTPBody {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		w.Write(resultLine(s.refuse(fmt.Errorf("%w: body over %d bytes", ErrTooLarge, maxHTTPBody))))
		return
	}
	var out bytes.Buffer
	status := http.StatusOK
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		err := s.SubmitLine(line)
		if err != nil && status == http.StatusOK {
			status = http.StatusBadRequest
			if errors.Is(err, ErrRateLimited) {
				status = http.StatusTooManyRequests
			}
		}
		out.Write(resultLine(err))
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(status)
	w.Write(out.Bytes())
}

// SubmitLine validates one observation line, rate-limits it and queues it
// for the tracker, stamped with the current clock. The error (nil when
// accepted) is what the recogniser gets back.
func (s *Server) SubmitLine(line []byte) error {
	o, err := ParseObservation(line, s.cfg.MaxLine)
	if err != nil {
		return s.refuse(err)
	}
	if o.Confidence != nil && *o.Confidence < s.cfg.MinConfidence {
		s.reg.Counter("robot_agent_identity_low_confidence_total", "Observations below min_confidence.").Inc()
		return nil
	}
	at := s.clk.Mono()
	if !s.take(at) {
		return s.refuse(fmt.Errorf("%w: more than %d per second", ErrRateLimited, s.cfg.MaxRate))
	}
	select {
	case s.queue <- item{o, at}:
		s.accepted.Inc()
		return nil
	default:
		return s.refuse(fmt.Errorf("%w: queue full", ErrRateLimited))
	}
}

// take is a token bucket of MaxRate per second, burst MaxRate.
func (s *Server) take(now time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rate := float64(s.cfg.MaxRate)
	s.tokens = min(rate, s.tokens+(now-s.tokensAt).Seconds()*rate)
	s.tokensAt = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// refuse counts err by kind, logs the first of each kind and returns it.
func (s *Server) refuse(err error) error {
	code := Code(err)
	s.reg.Counter("robot_agent_identity_rejected_"+code+"_total", "Recogniser lines refused with "+code+".").Inc()
	s.mu.Lock()
	first := !s.logged[code]
	s.logged[code] = true
	s.mu.Unlock()
	if first {
		s.log.Warn("identity: recogniser input refused (further refusals of this kind are only counted)", "code", code, "err", err)
	} else {
		s.log.Debug("identity: recogniser input refused", "code", code, "err", err)
	}
	return err
}
