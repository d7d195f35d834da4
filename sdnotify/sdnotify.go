// Package sdnotify tells systemd how the agent is doing: READY=1 once the
// main loops run, STATUS= lines for `systemctl status`, STOPPING=1 on
// shutdown, and WATCHDOG=1 keep-alive pings.
//
// It speaks the sd_notify(3) datagram protocol directly (no libsystemd, no
// go-systemd) over the unix datagram socket named by $NOTIFY_SOCKET; names
// starting with '@' are Linux abstract sockets. Without $NOTIFY_SOCKET
// (not started by systemd, or Type= is not notify) every call is a no-op.
//
// The Watchdog only pings while every registered main loop (uplink,
// playback, capture, ...) has beaten its Heartbeat recently, so a stalled
// loop makes systemd kill and restart the agent after WatchdogSec, as a hung
// process would. Pings are never sent from a free-running timer alone.
//
// # Concurrency
//
// Notifier methods are safe for concurrent use. Heartbeat.Beat is a single
// atomic store (no lock, no allocation) and may be called from the audio hot
// path by the loop that owns the heartbeat. Watchdog.Register may be called
// from any goroutine; Watchdog.Run runs in one goroutine of its own and
// Watchdog.Tick is safe for concurrent use.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Errors returned by this package.
var (
	// ErrBadSocket is returned for a $NOTIFY_SOCKET that is not a unix
	// socket path or abstract name.
	ErrBadSocket = errors.New("sdnotify: bad NOTIFY_SOCKET")
)

// States understood by systemd (see sd_notify(3)).
const (
	StateReady    = "READY=1"
	StateStopping = "STOPPING=1"
	StateWatchdog = "WATCHDOG=1"
)

// writeTimeout bounds one send so a wedged service manager cannot stall the
// caller.
const writeTimeout = time.Second

// Notifier sends state datagrams to the service manager. The zero value and
// a nil *Notifier are disabled no-ops.
type Notifier struct {
	addr *net.UnixAddr // nil: disabled

	mu    sync.Mutex
	ready bool // READY=1 already sent
}

// New returns a Notifier for the socket named socket, the value of
// $NOTIFY_SOCKET: an absolute path, or an abstract name starting with '@'.
// An empty socket gives a disabled Notifier.
func New(socket string) (*Notifier, error) {
	if socket == "" {
		return &Notifier{}, nil
	}
	if socket[0] != '/' && socket[0] != '@' {
		return nil, fmt.Errorf("%w: %q is neither an absolute path nor an abstract name (@...)", ErrBadSocket, socket)
	}
	if len(socket) < 2 {
		return nil, fmt.Errorf("%w: %q is too short", ErrBadSocket, socket)
	}
	// Go maps a leading '@' to the abstract namespace itself.
	return &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}}, nil
}

// FromEnv returns a Notifier for getenv("NOTIFY_SOCKET"); pass os.Getenv.
func FromEnv(getenv func(string) string) (*Notifier, error) {
	return New(getenv("NOTIFY_SOCKET"))
}

// Enabled reports whether a notify socket is configured.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Send sends one or more newline-separated assignments as one datagram.
// It is a no-op on a disabled Notifier.
func (n *Notifier) Send(state string) error {
	if !n.Enabled() {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sdnotify: dial %s: %w", n.addr.Name, err)
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sdnotify: send %q: %w", state, err)
	}
	return nil
}

// Ready sends READY=1, telling systemd that start-up finished. Only the
// first call sends; later calls return nil. Call it once devices are open
// and the main loops run (not after the first gateway connection: a board
// without network is still "up" and retrying).
func (n *Notifier) Ready() error {
	if !n.Enabled() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ready {
		return nil
	}
	if err := n.Send(StateReady); err != nil {
		return err
	}
	n.ready = true
	return nil
}

// Stopping sends STOPPING=1 at the start of a clean shutdown.
func (n *Notifier) Stopping() error { return n.Send(StateStopping) }

// Status sends STATUS=msg, shown by `systemctl status`. Newlines in msg
// (which would start a new assignment) become spaces.
func (n *Notifier) Status(msg string) error {
	return n.Send("STATUS=" + strings.ReplaceAll(msg, "\n", " "))
}

// Watchdog sends one WATCHDOG=1 keep-alive. Use a Watchdog rather than
// calling this from a timer.
func (n *Notifier) Watchdog() error { return n.Send(StateWatchdog) }
