package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/uplink"
)

// SkillHandler carries out gateway skills; the state/skills subsystem
// provides it. Without one every skill is answered with unknown_skill.
type SkillHandler interface {
	HandleSkill(ctx context.Context, s *protocol.Skill)
}

// ArbiterHandler acts on arbiter decisions for robot-raised function calls.
type ArbiterHandler interface {
	HandleArbiter(ctx context.Context, a *protocol.Arbiter)
}

// controlHandler receives gateway control messages on the uplink's control
// goroutine and routes them.
type controlHandler struct {
	log     *slog.Logger
	emit    func(protocol.Message) error
	skills  SkillHandler
	arbiter ArbiterHandler
	video   interface{ RequestKeyframe() }

	mu          sync.Mutex
	transcripts []string // last few ASR texts, for the summary
	responses   map[uint32]struct{}

	asr, llm, skills0, errs *metrics.Counter
}

func newControlHandler(log *slog.Logger, reg *metrics.Registry) *controlHandler {
	return &controlHandler{
		log:       log,
		responses: make(map[uint32]struct{}),
		asr:       reg.Counter("robot_agent_control_asr_total", "ASR results received."),
		llm:       reg.Counter("robot_agent_control_text_deltas_total", "LLM/VLM text deltas received."),
		skills0:   reg.Counter("robot_agent_control_skills_refused_total", "Skills refused because no skill handler is configured."),
		errs:      reg.Counter("robot_agent_control_emit_errors_total", "Control messages the agent could not queue."),
	}
}

// HandleControl implements uplink.ControlHandler.
func (h *controlHandler) HandleControl(ctx context.Context, m protocol.Message) {
	switch v := m.(type) {
	case *protocol.ASR:
		h.asr.Inc()
		h.mu.Lock()
		h.transcripts = append(h.transcripts, v.Text)
		if len(h.transcripts) > 5 {
			h.transcripts = h.transcripts[1:]
		}
		h.responses[v.ResponseID] = struct{}{}
		h.mu.Unlock()
		h.log.Info("asr", "response", v.ResponseID, "text", v.Text, "final", v.Final)
	case *protocol.Text:
		h.llm.Inc()
		if v.Text != "" {
			h.log.Info(v.Type, "response", v.ResponseID, "text", v.Text)
		} else {
			h.log.Debug(v.Type, "response", v.ResponseID)
		}
	case *protocol.Interrupt:
		h.log.Info("interrupt: playback flushed", "response", v.ResponseID, "reason", v.Reason)
	case *protocol.Skill:
		if h.skills != nil {
			h.skills.HandleSkill(ctx, v)
			return
		}
		h.skills0.Inc()
		h.log.Warn("skill refused: no skills are configured on this robot", "skill", v.Skill, "event", v.EventID)
		h.send(&protocol.SkillResult{Ref: v.EventID, OK: false, Error: &protocol.ErrorBody{
			Code: protocol.CodeUnknownSkill, Msg: "robot-agent: skill " + quote(v.Skill) + " is not on this robot's allowlist (no skills configured)"}})
	case *protocol.Arbiter:
		if h.arbiter != nil {
			h.arbiter.HandleArbiter(ctx, v)
			return
		}
		h.log.Info("function_call_arbiter with no function-call handler", "ref", v.Ref, "decision", v.Decision)
	case *protocol.KeyframeRequest:
		if h.video != nil {
			h.video.RequestKeyframe()
		} else {
			h.log.Debug("keyframe_request ignored: no camera")
		}
	case *protocol.Error:
		// Already logged and counted by the uplink.
	default:
		h.log.Debug("control message", "type", m.Envelope().Type)
	}
}

func quote(s string) string { return "\"" + s + "\"" }

func (h *controlHandler) send(m protocol.Message) {
	if h.emit == nil {
		return
	}
	if err := h.emit(m); err != nil {
		h.errs.Inc()
		h.log.Error("control: could not queue message", "type", m.Envelope().Type, "err", err)
	}
}

// progressReporter turns the player's position into playback_progress
// messages: periodic ones (ephemeral, every 200 ms while a response plays)
// and a final one per response (done or interrupted) on the lossless lane.
type progressReporter struct {
	player *playback.Player
	client *uplink.Client
	log    *slog.Logger
	// sessions, if set, names the session of each reported response.
	sessions *sessionTagger

	mu          sync.Mutex
	done        int
	interrupted int
	played      int64
}

func newProgressReporter(p *playback.Player, c *uplink.Client, log *slog.Logger) *progressReporter {
	return &progressReporter{player: p, client: c, log: log}
}

func (r *progressReporter) run(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var last playback.Progress
	lastSent := time.Time{}
	for {
		select {
		case <-ctx.Done():
			r.drain()
			return
		case <-t.C:
		}
		r.drain()
		p := r.player.Progress()
		if p.ResponseID != 0 && p != last && time.Since(lastSent) >= 200*time.Millisecond {
			r.client.SendEphemeral(&protocol.PlaybackProgress{ResponseID: p.ResponseID, SamplesPlayed: p.SamplesPlayed})
			last, lastSent = p, time.Now()
		}
	}
}

func (r *progressReporter) drain() {
	r.player.DrainEvents(func(e playback.Event) {
		m := &protocol.PlaybackProgress{ResponseID: e.ResponseID, SamplesPlayed: e.SamplesPlayed}
		if r.sessions != nil {
			m.SessionID = r.sessions.tag(e.ResponseID)
		}
		r.mu.Lock()
		r.played += e.SamplesPlayed
		if e.Kind == playback.EventInterrupted || e.SamplesLost > 0 {
			// A response cut by overflow was not played whole: never
			// "done" (docs/protocol.md §7.7).
			m.Interrupted = true
			m.LostSamples = e.SamplesLost
			r.interrupted++
		} else {
			m.Done = true
			r.done++
		}
		r.mu.Unlock()
		r.log.Info("response played", "response", e.ResponseID, "result", e.Kind.String(), "ms", e.SamplesPlayed*1000/24000)
		if err := r.client.Emit(m); err != nil {
			r.log.Error("playback_progress not queued", "err", err)
		}
	})
}

func (r *progressReporter) counts() (done, interrupted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done, r.interrupted
}
