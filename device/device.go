// Package device holds what the agent's device-facing parts share without
// depending on each other: the dependencies they are constructed with
// (Deps), the control-lane Emitter they send events through, and the
// errors for hardware or support that is absent here.
//
// It is a leaf (it imports only clock, metrics and protocol), so state
// modules, the recogniser endpoint, the skills arbiter, device drivers and
// encoders can all use it without importing one another.
package device

import (
	"errors"
	"log/slog"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

var (
	// ErrUnavailable marks a module or device that does not exist on this
	// host. Use errors.Is.
	ErrUnavailable = errors.New("device: unavailable")
	// ErrNotBuiltIn is returned by stubs for support that needs cgo or a
	// build tag this binary was built without.
	ErrNotBuiltIn = errors.New("device: support not built into this binary")
)

// Emitter sends a control event upstream. The uplink's control-lane outbox
// (uplink.Client.Emit) implements it: it assigns event_id when empty,
// never blocks for long and returns an error (for example when the outbox
// is full) instead of dropping. Implementations are safe for concurrent
// use.
type Emitter interface {
	Emit(m protocol.Message) error
}

// Deps are the dependencies every part's constructor takes.
type Deps struct {
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Registry
}

// WithDefaults fills nil fields: the real clock, a discarding logger and a
// private registry.
func (d Deps) WithDefaults() Deps {
	if d.Clock == nil {
		d.Clock = clock.NewReal()
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = metrics.NewRegistry()
	}
	return d
}
