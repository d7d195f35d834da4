// Package skills is the robot's local safety arbiter. Every skill the
// gateway asks for passes it before any hardware is touched:
//
//  1. the gateway link must be up;
//  2. the skill must be on the configured allowlist (unknown_skill);
//  3. the per-skill rate limit must have room (rate_limited);
//  4. the arguments must be a JSON object of the skill's typed fields, each
//     present and in range (bad_argument, naming the field and value);
//  5. the output named in "pin" must be on the configured pin allowlist
//     (bad_argument): pins are logical output names from the configuration,
//     never pin numbers from the network;
//  6. the output must exist on this robot now (unavailable).
//
// Every skill gets exactly one skill_result back: ok with a result, or a
// structured error with a protocol Code*. Refusals are counted per code
// (robot_agent_skills_rejected_<code>_total) and logged once per code.
//
// Dead-man: SetLinkUp(false) cancels every running skill and returns every
// allowed output to its safe level before it returns; nothing is
// re-energised when the link comes back, only a fresh command does that.
//
// The package also raises the robot's own function calls upstream and acts
// on the gateway's function_call_arbiter decision (see Raise).
//
// # Concurrency
//
// HandleSkill, HandleArbiter and SetLinkUp are meant for the uplink's single
// control goroutine but are safe for concurrent use, as are Raise (any
// goroutine: GPIO inputs, intents), RegisterDefault and Close. Running
// blinks and default handlers run on goroutines of their own; a blink never
// drives its output after it has been cancelled.
package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/device"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// Output is one output line the arbiter may drive; state/gpio's *Output
// implements it. Safe returns it to its safe level.
type Output interface {
	Set(on bool) error
	Safe() error
}

// Outputs finds outputs by logical name. An error wrapping
// device.ErrUnavailable means the output does not exist on this robot now.
type Outputs interface {
	Output(name string) (Output, error)
}

// OutputsFunc adapts a function to Outputs.
type OutputsFunc func(name string) (Output, error)

// Output implements Outputs.
func (f OutputsFunc) Output(name string) (Output, error) { return f(name) }

// safeRetry is how often a failed return to the safe level is retried
// (until it works or safeRetryFor passes).
const (
	safeRetry    = 50 * time.Millisecond
	safeRetryFor = 2 * time.Second
)

// skillError is a refusal or failure with its protocol code.
type skillError struct {
	code string
	msg  string
}

func (e *skillError) Error() string { return e.msg }

func fail(code, format string, args ...any) *skillError {
	return &skillError{code: code, msg: fmt.Sprintf("skills: "+format, args...)}
}

type pin struct {
	name string
	mu   sync.Mutex
	gen  uint64        // bumped to cancel whatever drives the pin
	stop chan struct{} // closed on cancel, wakes a blink
	out  Output        // nil until first used
}

type bucket struct {
	tokens float64
	at     time.Duration
}

// Arbiter is the safety arbiter. Create it with New.
type Arbiter struct {
	cfg     Config
	outputs Outputs
	emit    device.Emitter
	clk     clock.Clock
	log     *slog.Logger
	reg     *metrics.Registry

	received, succeeded, refused, deadman, safeErrs, emitErrs *metrics.Counter

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	linkUp  bool
	closed  bool
	allow   map[string]bool
	pins    map[string]*pin
	buckets map[string]*bucket
	logged  map[string]bool
	// lastOverride is the last override decision (mu).
	lastOverride Override
	// volume is the robot's volume control (mu), nil until SetVolume.
	volume Volume

	calls calls
}

// New returns an arbiter driving outputs and reporting through emit. The
// link starts down: call SetLinkUp(true) when the gateway session is up.
func New(cfg Config, outputs Outputs, emit device.Emitter, deps device.Deps) (*Arbiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.Defaults()
	deps = deps.WithDefaults()
	r := deps.Metrics
	a := &Arbiter{
		cfg:       cfg,
		outputs:   outputs,
		emit:      emit,
		clk:       deps.Clock,
		log:       deps.Log,
		reg:       r,
		received:  r.Counter("robot_agent_skills_total", "Skills received from the gateway."),
		succeeded: r.Counter("robot_agent_skills_ok_total", "Skills carried out."),
		refused:   r.Counter("robot_agent_skills_refused_total", "Skills refused or failed (gateway's and local), all codes."),
		deadman:   r.Counter("robot_agent_skills_deadman_total", "Link losses that returned outputs to their safe level."),
		safeErrs:  r.Counter("robot_agent_skills_safe_errors_total", "Failed attempts to return an output to its safe level."),
		emitErrs:  r.Counter("robot_agent_skills_emit_errors_total", "skill_result / function_call events the uplink refused."),
		allow:     map[string]bool{},
		pins:      map[string]*pin{},
		buckets:   map[string]*bucket{},
		logged:    map[string]bool{},
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	for _, s := range cfg.Allow {
		a.allow[s] = true
	}
	for _, p := range cfg.Pins {
		a.pins[p] = &pin{name: p}
	}
	a.calls.init(a)
	return a, nil
}

// Volume is the robot's own volume control (package volume's Sink, above
// the echo canceller's reference).
type Volume interface {
	SetDB(db float64) error
	DB() float64
}

// SetVolume gives audio.volume the control it sets. Without one the skill
// answers unavailable. Any goroutine.
func (a *Arbiter) SetVolume(v Volume) {
	a.mu.Lock()
	a.volume = v
	a.mu.Unlock()
}

// SetLinkUp tells the arbiter whether the gateway link is up. On a
// transition to down (the dead-man), every running skill is cancelled and
// every allowed output is returned to its safe level before SetLinkUp
// returns; outputs stay there after the link comes back until a fresh
// command arrives.
func (a *Arbiter) SetLinkUp(up bool) {
	a.mu.Lock()
	was, closed := a.linkUp, a.closed
	a.linkUp = up
	a.mu.Unlock()
	if closed {
		// The agent is stopping: Close already made every output safe;
		// the link going down now is the clean exit, not a loss.
		return
	}
	if up || !was {
		if up && !was {
			a.log.Info("skills: gateway link up; outputs stay safe until commanded")
		}
		return
	}
	a.deadman.Inc()
	n := a.allSafe("gateway link lost")
	a.log.Warn("skills: gateway link lost: outputs returned to their safe level", "outputs", n)
}

// LinkChanged implements uplink.LinkObserver: register the arbiter with
// the uplink client's AddObserver and the dead-man follows the session.
func (a *Arbiter) LinkChanged(up bool, sessionID string) { a.SetLinkUp(up) }

// allSafe cancels whatever drives each allowed output and puts it in its
// safe level, retrying failures in the background. It returns how many
// outputs it reached.
func (a *Arbiter) allSafe(why string) int {
	n := 0
	for _, name := range a.cfg.Pins {
		p := a.pins[name]
		p.mu.Lock()
		a.cancelLocked(p)
		out := p.out
		if out == nil {
			if o, err := a.outputs.Output(name); err == nil && o != nil {
				out, p.out = o, o
			}
		}
		var err error
		if out != nil {
			err = out.Safe()
			n++
		}
		p.mu.Unlock()
		if err != nil {
			a.safeErrs.Inc()
			a.log.Error("skills: output did not return to its safe level; retrying", "output", name, "why", why, "err", err)
			a.retrySafe(p, out)
		}
	}
	return n
}

// retrySafe keeps trying to return p to its safe level while nothing newer
// drives it.
func (a *Arbiter) retrySafe(p *pin, out Output) {
	p.mu.Lock()
	gen := p.gen
	p.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for tries := time.Duration(0); tries < safeRetryFor; tries += safeRetry {
			if !a.sleep(safeRetry, nil) {
				return
			}
			p.mu.Lock()
			if p.gen != gen {
				p.mu.Unlock()
				return
			}
			err := out.Safe()
			p.mu.Unlock()
			if err == nil {
				a.log.Info("skills: output back in its safe level", "output", p.name)
				return
			}
			a.safeErrs.Inc()
		}
		a.log.Error("skills: output could not be returned to its safe level", "output", p.name)
	}()
}

func (a *Arbiter) cancelLocked(p *pin) {
	p.gen++
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
}

// sleep waits d on the clock; false if the arbiter closed or stop closed.
func (a *Arbiter) sleep(d time.Duration, stop <-chan struct{}) bool {
	t := a.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-stop:
		return false
	case <-a.ctx.Done():
		return false
	}
}

// HandleSkill checks and carries out a skill from the gateway and emits
// exactly one skill_result for it (for gpio.blink, when the blink ends).
func (a *Arbiter) HandleSkill(ctx context.Context, m *protocol.Skill) {
	a.received.Inc()
	ref := m.EventID
	err := a.execute(ref, m.Skill, m.Args, func(res json.RawMessage, err error) { a.result(ref, m.Skill, res, err) })
	if err != nil {
		a.result(ref, m.Skill, nil, err)
	}
}

// Local runs a skill for the robot itself (a default handler reacting to a
// button, say) through the same checks; no skill_result is sent. It
// returns when the skill has been checked and started.
func (a *Arbiter) Local(skill string, args json.RawMessage) error {
	err := a.execute("", skill, args, func(_ json.RawMessage, err error) {
		if err != nil {
			a.log.Info("skills: local skill ended", "skill", skill, "err", err)
		}
	})
	if err != nil {
		a.count(err, skill)
		return err
	}
	return nil
}

// execute runs the checks, then starts the skill; done is called once
// with the outcome unless execute returns an error (then nothing ran).
func (a *Arbiter) execute(ref, skill string, raw json.RawMessage, done func(json.RawMessage, error)) error {
	a.mu.Lock()
	up, closed := a.linkUp, a.closed
	a.mu.Unlock()
	switch {
	case closed:
		return fail(protocol.CodeUnavailable, "the agent is shutting down")
	case !up && ref != "":
		return fail(protocol.CodeUnavailable, "gateway link is down")
	case !up:
		return fail(protocol.CodeUnavailable, "outputs are held safe while the gateway link is down")
	case !a.allow[skill]:
		return fail(protocol.CodeUnknownSkill, "skill %q is not on the robot's allowlist", truncate(skill))
	case !a.take(skill):
		return fail(protocol.CodeRateLimited, "skill %q is limited to %v per second (burst %d)", skill, a.cfg.RatePerSec, a.cfg.Burst)
	}
	switch skill {
	case SkillSet:
		var args struct {
			Pin *string `json:"pin"`
			On  *bool   `json:"on"`
		}
		if err := decodeArgs(raw, &args, "pin", "on"); err != nil {
			return err
		}
		if args.Pin == nil {
			return missingPin()
		}
		if args.On == nil {
			return fail(protocol.CodeBadArgument, "field \"on\" is missing (want true or false)")
		}
		p, out, err := a.pinFor(*args.Pin)
		if err != nil {
			return err
		}
		p.mu.Lock()
		a.cancelLocked(p)
		err = out.Set(*args.On)
		p.mu.Unlock()
		if err != nil {
			return fail(protocol.CodeDeviceError, "output %q: %v", p.name, err)
		}
		res, _ := json.Marshal(map[string]any{"pin": p.name, "on": *args.On})
		done(res, nil)
		return nil
	case SkillBlink:
		var args struct {
			Pin      *string `json:"pin"`
			Times    *int    `json:"times"`
			PeriodMS *int    `json:"period_ms"`
		}
		if err := decodeArgs(raw, &args, "pin", "times", "period_ms"); err != nil {
			return err
		}
		lim := a.cfg.Blink
		switch {
		case args.Pin == nil:
			return missingPin()
		case args.Times == nil:
			return fail(protocol.CodeBadArgument, "field \"times\" is missing (want 1..%d)", lim.MaxTimes)
		case *args.Times < 1 || *args.Times > lim.MaxTimes:
			return fail(protocol.CodeBadArgument, "field \"times\" is %d, want 1..%d", *args.Times, lim.MaxTimes)
		case args.PeriodMS == nil:
			return fail(protocol.CodeBadArgument, "field \"period_ms\" is missing (want %d..%d)", lim.MinPeriod.Milliseconds(), lim.MaxPeriod.Milliseconds())
		}
		period := time.Duration(*args.PeriodMS) * time.Millisecond
		if period < lim.MinPeriod || period > lim.MaxPeriod {
			return fail(protocol.CodeBadArgument, "field \"period_ms\" is %d, want %d..%d", *args.PeriodMS, lim.MinPeriod.Milliseconds(), lim.MaxPeriod.Milliseconds())
		}
		p, out, err := a.pinFor(*args.Pin)
		if err != nil {
			return err
		}
		p.mu.Lock()
		a.cancelLocked(p)
		gen, stop := p.gen, make(chan struct{})
		p.stop = stop
		p.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			done(a.blink(p, out, gen, stop, *args.Times, period))
		}()
		return nil
	case SkillVolume:
		return a.setVolume(raw, done)
	}
	// Unreachable: Config.Validate admits only the skills handled above.
	return fail(protocol.CodeInternal, "skills: internal error: no executor for skill %q", skill)
}

// setVolume carries out audio.volume: exactly one of level_db (the level,
// min_db..0) or change_db (added to the current level, the result held
// within min_db..0); the result is the level set.
func (a *Arbiter) setVolume(raw json.RawMessage, done func(json.RawMessage, error)) error {
	var args struct {
		Level  *float64 `json:"level_db"`
		Change *float64 `json:"change_db"`
	}
	if err := decodeArgs(raw, &args, "level_db", "change_db"); err != nil {
		return err
	}
	lo := a.cfg.Volume.MinDB
	a.mu.Lock()
	v := a.volume
	a.mu.Unlock()
	var db float64
	switch {
	case (args.Level == nil) == (args.Change == nil):
		return fail(protocol.CodeBadArgument, "want exactly one of \"level_db\" (%g..0) and \"change_db\"", lo)
	case args.Level != nil && (*args.Level < lo || *args.Level > 0):
		return fail(protocol.CodeBadArgument, "field \"level_db\" is %g, want %g..0", *args.Level, lo)
	case args.Change != nil && math.Abs(*args.Change) > -lo:
		return fail(protocol.CodeBadArgument, "field \"change_db\" is %g, want %g..%g", *args.Change, lo, -lo)
	case v == nil:
		return fail(protocol.CodeUnavailable, "no volume control: the agent's speaker does not run through it")
	case args.Level != nil:
		db = *args.Level
	default:
		db = min(0, max(lo, v.DB()+*args.Change))
	}
	if err := v.SetDB(db); err != nil {
		return fail(protocol.CodeDeviceError, "volume: %v", err)
	}
	res, _ := json.Marshal(map[string]any{"level_db": db})
	done(res, nil)
	return nil
}

// blink toggles out times times; it stops, leaving the output to whoever
// cancelled it, as soon as the pin's generation moves on.
func (a *Arbiter) blink(p *pin, out Output, gen uint64, stop chan struct{}, times int, period time.Duration) (json.RawMessage, error) {
	drive := func(on bool) (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.gen != gen {
			return false, nil
		}
		return true, out.Set(on)
	}
	for i := 0; i < times; i++ {
		for _, on := range []bool{true, false} {
			ok, err := drive(on)
			if err != nil {
				drive(false)
				return nil, fail(protocol.CodeDeviceError, "output %q: %v", p.name, err)
			}
			if !ok || !a.sleep(period/2, stop) {
				return nil, a.cancelled(p, i)
			}
		}
	}
	p.mu.Lock()
	if p.gen == gen {
		p.stop = nil
	}
	p.mu.Unlock()
	res, _ := json.Marshal(map[string]any{"pin": p.name, "times": times})
	return res, nil
}

func (a *Arbiter) cancelled(p *pin, completed int) error {
	a.mu.Lock()
	up, closed := a.linkUp, a.closed
	a.mu.Unlock()
	why := "superseded by a newer command on the output"
	switch {
	case closed:
		why = "the agent is shutting down"
	case !up:
		why = "gateway link lost (dead-man)"
	}
	return fail(protocol.CodeUnavailable, "blink on %q stopped after %d blinks: %s", p.name, completed, why)
}

// pinFor checks name against the pin allowlist and finds its output.
func (a *Arbiter) pinFor(name string) (*pin, Output, error) {
	p := a.pins[name]
	if p == nil {
		return nil, nil, fail(protocol.CodeBadArgument, "field \"pin\" is %q, which is not an output skills may drive (allowed: %v)", truncate(name), a.cfg.Pins)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil {
		o, err := a.outputs.Output(name)
		if err != nil || o == nil {
			if err == nil || errors.Is(err, device.ErrUnavailable) {
				return nil, nil, fail(protocol.CodeUnavailable, "output %q is not available on this robot: %v", name, err)
			}
			return nil, nil, fail(protocol.CodeDeviceError, "output %q: %v", name, err)
		}
		p.out = o
	}
	return p, p.out, nil
}

// decodeArgs decodes a JSON object of the skill's fields into dst,
// refusing anything else with an error naming the field.
func decodeArgs(raw json.RawMessage, dst any, fields ...string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return fail(protocol.CodeBadArgument, "field \"args\" is missing (want an object with %v)", fields)
	}
	if raw[0] != '{' {
		return fail(protocol.CodeBadArgument, "field \"args\" must be a JSON object with %v", fields)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fail(protocol.CodeBadArgument, "field %q: JSON %s is not a valid %s", te.Field, te.Value, te.Type)
		}
		return fail(protocol.CodeBadArgument, "args: %v", err)
	}
	return nil
}

func missingPin() error {
	return fail(protocol.CodeBadArgument, "field \"pin\" is missing (want an output name)")
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// take is a per-skill token bucket.
func (a *Arbiter) take(skill string) bool {
	now := a.clk.Mono()
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.buckets[skill]
	if b == nil {
		b = &bucket{tokens: float64(a.cfg.Burst), at: now}
		a.buckets[skill] = b
	}
	b.tokens = min(float64(a.cfg.Burst), b.tokens+(now-b.at).Seconds()*a.cfg.RatePerSec)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// count records a refusal or failure by code, logging the first of each
// code (later ones at debug level).
func (a *Arbiter) count(err error, skill string) string {
	code := protocol.CodeInternal
	var se *skillError
	if errors.As(err, &se) {
		code = se.code
	}
	a.reg.Counter("robot_agent_skills_rejected_"+code+"_total", "Skills refused or failed with "+code+".").Inc()
	a.refused.Inc()
	a.mu.Lock()
	first := !a.logged[code]
	a.logged[code] = true
	a.mu.Unlock()
	if first {
		a.log.Warn("skills: skill refused (further "+code+" refusals are only counted)", "skill", truncate(skill), "code", code, "err", err)
	} else {
		a.log.Debug("skills: skill refused", "skill", truncate(skill), "code", code, "err", err)
	}
	return code
}

// result emits the one skill_result for ref.
func (a *Arbiter) result(ref, skill string, res json.RawMessage, err error) {
	m := &protocol.SkillResult{
		Meta: protocol.Meta{Type: protocol.TypeSkillResult, TS: a.clk.Mono().Microseconds()},
		Ref:  ref,
		OK:   err == nil,
	}
	if err != nil {
		m.Error = &protocol.ErrorBody{Code: a.count(err, skill), Msg: err.Error()}
	} else {
		a.succeeded.Inc()
		m.Result = res
	}
	if eerr := a.emit.Emit(m); eerr != nil {
		a.emitErrs.Inc()
		a.log.Warn("skills: skill_result not sent", "ref", ref, "err", eerr)
	}
}

// Close cancels running skills and pending function calls, returns every
// output to its safe level and waits for the arbiter's goroutines.
func (a *Arbiter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	a.allSafe("agent stopping")
	a.cancel()
	a.wg.Wait()
	return nil
}

// itoa avoids fmt for ids.
func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
