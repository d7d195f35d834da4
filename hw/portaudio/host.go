package portaudio

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// Defaults of HostConfig.
const (
	DefaultRetryMin      = 250 * time.Millisecond
	DefaultRetryMax      = 5 * time.Second
	DefaultStallTimeout  = 500 * time.Millisecond
	DefaultWatchInterval = 100 * time.Millisecond
)

// ErrHostOpen is returned by NewHost while another Host is open: PortAudio
// is process-wide state, and a Host terminates and re-initialises it to
// rescan devices.
var ErrHostOpen = errors.New("portaudio: a Host is already open in this process")

// hostOpen guards the one-Host-per-process rule (PortAudio itself is a
// process-wide singleton; this flag only mirrors that).
var hostOpen atomic.Bool

// HostConfig configures a Host. Zero fields take defaults.
type HostConfig struct {
	// Clock paces devices while they are missing and times retries
	// (default: the real clock). Device audio is always paced by the device.
	Clock clock.Clock
	// Log receives one warning per device outage and one info line when it
	// ends (default: discard).
	Log *slog.Logger
	// Metrics receives the robot_agent_audio_* counters (default: private).
	Metrics *metrics.Registry
	// RetryMin and RetryMax bound the exponential backoff between attempts
	// to reopen a missing device (defaults 250 ms and 5 s).
	RetryMin, RetryMax time.Duration
	// StallTimeout: a running stream whose callback has not run for this
	// long is declared lost (default 500 ms).
	StallTimeout time.Duration
	// WatchInterval is how often the supervisor checks streams (default
	// 100 ms).
	WatchInterval time.Duration
	// Timing, if set, receives every device callback's record (after the
	// metrics took it), on the supervisor goroutine, up to WatchInterval
	// late: for tools and benchmarks that want every period, not only the
	// histograms. It must not block.
	Timing func(output bool, t CallbackTiming)
}

func (c HostConfig) withDefaults() HostConfig {
	if c.Clock == nil {
		c.Clock = clock.NewReal()
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = metrics.NewRegistry()
	}
	if c.RetryMin <= 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(DefaultRetryMax, c.RetryMin)
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.WatchInterval <= 0 {
		c.WatchInterval = DefaultWatchInterval
	}
	return c
}

// Host owns PortAudio for the process: it enumerates devices, opens Sinks
// and Sources, and supervises their streams (see the package
// documentation on hot-plug).
type Host struct {
	cfg HostConfig
	clk clock.Clock
	log *slog.Logger
	be  backend

	mu     sync.Mutex // guards the fields below and every endpoint's supervisor state
	inited bool
	devs   []Device
	fp     string // backend fingerprint at the last enumeration
	eps    []*endpoint
	closed bool

	rescans *metrics.Counter

	done chan struct{}
	wg   sync.WaitGroup
}

// NewHost initialises PortAudio, enumerates devices and starts the
// supervisor. Without PortAudio support in the binary it returns an error
// wrapping hw.ErrNotBuiltIn. Only one Host may be open at a time
// (ErrHostOpen).
func NewHost(cfg HostConfig) (*Host, error) {
	be, err := newBackend()
	if err != nil {
		return nil, err
	}
	h, err := newHost(be, cfg)
	if err != nil {
		return nil, err
	}
	h.wg.Add(1)
	go h.supervise()
	return h, nil
}

// newHost builds a Host on be without starting the supervisor (tests drive
// check by hand).
func newHost(be backend, cfg HostConfig) (*Host, error) {
	if !hostOpen.CompareAndSwap(false, true) {
		return nil, ErrHostOpen
	}
	cfg = cfg.withDefaults()
	h := &Host{cfg: cfg, clk: cfg.Clock, log: cfg.Log, be: be, done: make(chan struct{})}
	h.rescans = cfg.Metrics.Counter("robot_agent_audio_rescans_total", "PortAudio re-initialisations to rescan for audio devices.")
	h.mu.Lock()
	err := h.enumerate()
	h.mu.Unlock()
	if err != nil {
		hostOpen.Store(false)
		return nil, err
	}
	return h, nil
}

// enumerate initialises the backend if needed and refreshes the device
// list. h.mu held.
func (h *Host) enumerate() error {
	if !h.inited {
		if err := h.be.initialize(); err != nil {
			return err
		}
		h.inited = true
	}
	h.fp = h.be.fingerprint()
	devs, err := h.be.devices()
	if err != nil {
		return err
	}
	h.devs = devs
	return nil
}

// Devices returns the devices found at the last enumeration (start-up or
// the last rescan). Any goroutine.
func (h *Host) Devices() []Device {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Device(nil), h.devs...)
}

// Close closes every Sink and Source of h, terminates PortAudio and stops
// the supervisor. Any goroutine; idempotent.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	eps := append([]*endpoint(nil), h.eps...)
	h.mu.Unlock()
	close(h.done)
	h.wg.Wait()
	for _, ep := range eps {
		ep.close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var err error
	if h.inited {
		err = h.be.terminate()
		h.inited = false
	}
	hostOpen.Store(false)
	return err
}

func (h *Host) supervise() {
	defer h.wg.Done()
	t := h.clk.NewTimer(h.cfg.WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-t.C():
		}
		h.check()
		t.Reset(h.cfg.WatchInterval)
	}
}

// check is one round of supervision: detect lost streams, retry missing
// devices (with backoff), and rescan when that can find new devices.
func (h *Host) check() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	now := h.clk.Mono()
	failed := false
	for _, ep := range h.eps {
		switch ep.state {
		case epRunning:
			ep.watch(now)
		case epDown:
			if now < ep.retryAt {
				continue
			}
			if err := ep.open(now); err != nil {
				ep.retryFailed(now, err)
				failed = true
			}
		}
	}
	if !failed {
		return
	}
	// PortAudio only sees devices that appeared since its initialisation
	// after Terminate+Initialize, which closes every stream. Do it when it
	// costs nothing (no stream running) or when the system's sound
	// devices visibly changed.
	running := false
	for _, ep := range h.eps {
		running = running || ep.state == epRunning
	}
	if running && h.be.fingerprint() == h.fp {
		return
	}
	h.rescan(now)
}

// rescan closes every stream, re-initialises PortAudio, and reopens every
// endpoint. h.mu held.
func (h *Host) rescan(now time.Duration) {
	h.rescans.Inc()
	var reopen []*endpoint
	for _, ep := range h.eps {
		if ep.state == epRunning {
			ep.stop()
			reopen = append(reopen, ep)
		}
	}
	if h.inited {
		if err := h.be.terminate(); err != nil {
			h.log.Warn("portaudio: terminate for rescan failed", "err", err)
		}
		h.inited = false
	}
	if err := h.enumerate(); err != nil {
		h.log.Warn("portaudio: rescan failed; retrying later", "err", err)
		for _, ep := range reopen {
			ep.lose(now, "rescan failed: "+err.Error())
		}
		return
	}
	h.log.Debug("portaudio: rescanned devices", "devices", len(h.devs))
	for _, ep := range h.eps {
		wasRunning := false
		for _, r := range reopen {
			wasRunning = wasRunning || r == ep
		}
		if ep.state != epDown && !wasRunning {
			continue
		}
		// A missing device that is still missing keeps its retry schedule.
		if err := ep.open(now); err != nil && wasRunning {
			ep.lose(now, "not reopened after rescan: "+err.Error())
		}
	}
}

// register adds ep and opens its device now; a missing device leaves ep
// down (degraded) with retries scheduled.
func (h *Host) register(ep *endpoint) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("portaudio: host closed: %w", hw.ErrClosed)
	}
	if _, err := Match(h.devs, ep.cfg.Device, ep.output); errors.Is(err, ErrAmbiguous) {
		return err
	}
	h.eps = append(h.eps, ep)
	now := h.clk.Mono()
	if err := ep.open(now); err != nil {
		ep.startDegraded(now, err)
	}
	return nil
}

// unregister removes ep (h.mu not held).
func (h *Host) unregister(ep *endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, e := range h.eps {
		if e == ep {
			h.eps = append(h.eps[:i], h.eps[i+1:]...)
			return
		}
	}
}
