package identity

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/device"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// maxTracked bounds how many UIDs the tracker remembers; the least
// recently seen is forgotten first.
const maxTracked = 4096

type person struct {
	lastSeen  time.Duration
	lastInfo  time.Duration
	lastGreet time.Duration
	greeted   bool
}

// Tracker turns observations into face_info and greet_signal events:
//
//   - face_info for a UID is sent on its appearance and then at most once
//     per dedup_window while it stays in view (repeats inside the window are
//     counted and dropped);
//   - an appearance is a UID never seen, or one not seen for absence;
//   - greet_signal is sent on an appearance unless the UID was greeted less
//     than greet_cooldown ago: one greet per appearance.
//
// A Tracker is used by one goroutine (the Server's).
type Tracker struct {
	cfg    Config
	emit   device.Emitter
	log    *slog.Logger
	people map[string]*person

	faceInfos, greets, deduped, emitErrs *metrics.Counter

	lastErrAt time.Duration
	errLogged bool
	clk       clock.Clock
}

// NewTracker returns a tracker; cfg must be valid.
func NewTracker(cfg Config, emit device.Emitter, clk clock.Clock, log *slog.Logger, reg *metrics.Registry) *Tracker {
	return &Tracker{
		cfg:       cfg.Defaults(),
		emit:      emit,
		log:       log,
		clk:       clk,
		people:    map[string]*person{},
		faceInfos: reg.Counter("robot_agent_identity_face_info_total", "face_info events sent."),
		greets:    reg.Counter("robot_agent_identity_greet_total", "greet_signal events sent."),
		deduped:   reg.Counter("robot_agent_identity_deduplicated_total", "Observations dropped as repeats inside dedup_window."),
		emitErrs:  reg.Counter("robot_agent_identity_emit_errors_total", "Identity events the uplink refused."),
	}
}

// Observe handles one validated observation captured at at (clock Mono).
func (t *Tracker) Observe(o Observation, at time.Duration) {
	p := t.people[o.UID]
	isNew := p == nil
	appeared := isNew || at-p.lastSeen >= t.cfg.Absence
	if isNew {
		if len(t.people) >= maxTracked {
			t.forgetOldest()
		}
		p = &person{}
		t.people[o.UID] = p
	}
	p.lastSeen = at
	if !appeared && at-p.lastInfo < t.cfg.DedupWindow {
		t.deduped.Inc()
		return
	}
	p.lastInfo = at
	id := protocol.Identity{UID: o.UID, Kind: o.Kind}
	if o.Confidence != nil {
		id.Confidence = *o.Confidence
	}
	if t.send(&protocol.FaceInfo{
		Meta:       protocol.Meta{Type: protocol.TypeFaceInfo, TS: at.Microseconds()},
		Identities: []protocol.Identity{id},
		Param:      o.Param,
	}) {
		t.faceInfos.Inc()
	}
	if !appeared || (p.greeted && at-p.lastGreet < t.cfg.GreetCooldown) {
		return
	}
	reason := "returned"
	if isNew {
		reason = "new"
	}
	param, _ := json.Marshal(struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	}{o.Kind, reason})
	p.greeted, p.lastGreet = true, at
	if t.send(&protocol.GreetSignal{
		Meta:  protocol.Meta{Type: protocol.TypeGreetSignal, TS: at.Microseconds()},
		UID:   o.UID,
		Param: param,
	}) {
		t.greets.Inc()
	}
}

func (t *Tracker) forgetOldest() {
	var oldest string
	var at time.Duration
	first := true
	for uid, p := range t.people {
		if first || p.lastSeen < at {
			oldest, at, first = uid, p.lastSeen, false
		}
	}
	delete(t.people, oldest)
}

func (t *Tracker) send(m protocol.Message) bool {
	err := t.emit.Emit(m)
	if err == nil {
		return true
	}
	t.emitErrs.Inc()
	now := t.clk.Mono()
	if !t.errLogged || now-t.lastErrAt >= 10*time.Second {
		t.errLogged, t.lastErrAt = true, now
		t.log.Warn("identity: event not sent", "type", m.Envelope().Type, "err", err)
	}
	return false
}
