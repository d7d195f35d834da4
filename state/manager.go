package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/metrics"
)

// Module is one source of robot state.
//
// The Manager calls Open, then Run on a goroutine of its own, then Close,
// never concurrently with each other. Open acquires devices; an error
// wrapping ErrUnavailable means the device does not exist here. Run
// publishes until ctx is done (returning nil) or the device fails
// (returning the error; the Manager closes, reopens and reruns the module
// with backoff). Close releases devices and puts outputs in their safe state.
type Module interface {
	Name() string
	Open() error
	Run(ctx context.Context, pub *Publisher) error
	Close() error
}

// Status is a module's lifecycle state.
type Status string

// Module statuses.
const (
	StatusStarting    Status = "starting"
	StatusRunning     Status = "running"
	StatusUnavailable Status = "unavailable" // device missing at start; not retried
	StatusFailed      Status = "failed"      // Run or a reopen failed; retried with backoff
	StatusStopped     Status = "stopped"
)

// ModuleStatus is what Status reports for one module.
type ModuleStatus struct {
	Name   string `json:"-"`
	Status Status `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Restart backoff after a module fails.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

type entry struct {
	mod    Module
	pub    *Publisher
	avail  *metrics.Gauge
	status ModuleStatus
	opened bool
}

// Manager starts, supervises and stops modules.
type Manager struct {
	emit Emitter
	deps Deps
	log  *slog.Logger

	mu      sync.Mutex
	entries []*entry
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
}

// NewManager returns a manager whose modules publish through emit.
func NewManager(emit Emitter, deps Deps) *Manager {
	deps = deps.WithDefaults()
	return &Manager{emit: emit, deps: deps, log: deps.Log}
}

// Add registers modules. It must be called before Start; module names must
// be unique.
func (m *Manager) Add(mods ...Module) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("state: Add after Start")
	}
	for _, mod := range mods {
		for _, e := range m.entries {
			if e.mod.Name() == mod.Name() {
				return fmt.Errorf("state: module name %q registered twice", mod.Name())
			}
		}
		name := mod.Name()
		m.entries = append(m.entries, &entry{
			mod:    mod,
			pub:    NewPublisher(name, m.emit, m.deps),
			avail:  m.deps.Metrics.Gauge("robot_agent_state_module_"+metricName(name)+"_up", "1 while module "+name+" runs, 0 when unavailable or failed."),
			status: ModuleStatus{Name: name, Status: StatusStarting},
		})
	}
	return nil
}

func metricName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Start opens every module and runs the ones that opened. A module that is
// unavailable or fails to open does not stop the others; its status is
// published as a "module.<name>" state event. Start returns once every
// module has been opened (so outputs are usable when it returns).
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return
	}
	m.started = true
	ctx, m.cancel = context.WithCancel(ctx)
	entries := append([]*entry(nil), m.entries...)
	m.mu.Unlock()
	for _, e := range entries {
		err := e.mod.Open()
		if err != nil {
			st := StatusFailed
			if errors.Is(err, ErrUnavailable) {
				st = StatusUnavailable
			}
			m.setStatus(e, st, err)
			if st == StatusUnavailable {
				continue
			}
		} else {
			e.opened = true
			m.setStatus(e, StatusRunning, nil)
		}
		m.wg.Add(1)
		go m.supervise(ctx, e)
	}
}

// supervise runs e until ctx is done, reopening it with backoff after
// failures. It owns e.opened from here on.
func (m *Manager) supervise(ctx context.Context, e *entry) {
	defer m.wg.Done()
	backoff := minBackoff
	for {
		if e.opened {
			start := m.deps.Clock.Mono()
			err := e.mod.Run(ctx, e.pub)
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				err = errors.New("state: Run returned before the agent stopped")
			}
			if cerr := e.mod.Close(); cerr != nil {
				m.log.Warn("state: close after failure", "module", e.mod.Name(), "err", cerr)
			}
			e.opened = false
			m.setStatus(e, StatusFailed, err)
			if m.deps.Clock.Mono()-start > 2*maxBackoff {
				backoff = minBackoff // it ran fine for a while
			}
		}
		t := m.deps.Clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		backoff = min(2*backoff, maxBackoff)
		if err := e.mod.Open(); err != nil {
			m.setStatus(e, StatusFailed, err)
			continue
		}
		e.opened = true
		m.setStatus(e, StatusRunning, nil)
	}
}

func (m *Manager) setStatus(e *entry, st Status, err error) {
	m.mu.Lock()
	changed := e.status.Status != st
	e.status.Status = st
	e.status.Error = ""
	if err != nil {
		e.status.Error = err.Error()
	}
	s := e.status
	m.mu.Unlock()
	if st == StatusRunning {
		e.avail.Set(1)
	} else {
		e.avail.Set(0)
	}
	switch st {
	case StatusRunning:
		m.log.Info("state: module running", "module", s.Name)
	case StatusUnavailable:
		m.log.Warn("state: module unavailable; agent continues without it", "module", s.Name, "err", err)
	default:
		m.log.Warn("state: module "+string(st), "module", s.Name, "err", err)
	}
	if !changed && st == StatusFailed {
		return // do not repeat the same status event on every retry
	}
	v, _ := json.Marshal(s)
	_ = e.pub.Publish("module."+s.Name, v, m.deps.Clock.Mono())
}

// Status returns every module's status, sorted by name.
func (m *Manager) Status() []ModuleStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ModuleStatus, len(m.entries))
	for i, e := range m.entries {
		out[i] = e.status
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Stop stops every module, waits for their Run to return and closes them.
// It returns the first Close error.
func (m *Manager) Stop() error {
	m.mu.Lock()
	if !m.started || m.cancel == nil {
		m.mu.Unlock()
		return nil
	}
	m.cancel()
	m.cancel = nil
	entries := append([]*entry(nil), m.entries...)
	m.mu.Unlock()
	m.wg.Wait()
	var first error
	for _, e := range entries {
		if e.opened {
			if err := e.mod.Close(); err != nil && first == nil {
				first = fmt.Errorf("state: close %s: %w", e.mod.Name(), err)
			}
			e.opened = false
		}
		m.mu.Lock()
		if e.status.Status == StatusRunning {
			e.status.Status = StatusStopped
		}
		m.mu.Unlock()
		e.avail.Set(0)
	}
	return first
}
