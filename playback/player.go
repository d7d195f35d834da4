// Package playback is the jitter buffer and player between the gateway
// reader and the speaker: TTS audio (PCM16LE 24 kHz mono, hw.TTSFormat)
// flows from the WebSocket read pump into a lock-free ring (Ring) and out to
// the device through Player.Fill (device callback) or Player.Run (blocking
// writes).
//
// Responses are identified by a uint32 response id (> 0, increasing within
// a session). The player prebuffers the start of each response, conceals
// underruns with click-free fades, flushes interrupted responses in O(1)
// (barge-in), reports per-response progress and completion events, and
// measures push-to-device latency.
//
// # Concurrency
//
// A Player has three kinds of callers:
//   - the producer, one goroutine (the read pump): PushPCM, EndResponse,
//     ResetSession;
//   - the consumer, one goroutine or device callback at a time: Fill, Run;
//   - anyone: Interrupt, Progress, Depth, Latencies, and DrainEvents (the
//     latter from one goroutine at a time).
//
// Nothing on the producer or consumer path locks, blocks or allocates
// (asserted by tests with testing.AllocsPerRun). Shared state is atomics:
//   - the Ring (see its Memory ordering section);
//   - gen, the generation, bumped by every Interrupt; every slot is tagged
//     with the generation current when the producer filled it;
//   - cutoff, the highest interrupted response key; maxSeen, the highest
//     key pushed; ended, the highest key whose last chunk has arrived.
//
// # Interrupt
//
// Interrupt raises cutoff and then bumps gen (O(1), any goroutine). The
// producer loads gen and then cutoff before tagging a chunk, so a chunk
// tagged with the new generation was checked against the new cutoff
// (sync/atomic is sequentially consistent), and late chunks of an
// interrupted response are dropped at the door (counted as stale). A chunk
// tagged with the old generation just before the bump may still be
// published afterwards; the consumer reloads gen (and then cutoff) at the
// start of every Fill and before every slot, and drops a slot when its
// generation tag is older than the consumer's and its response is at or
// below the cutoff. Checking the key as well as the tag means a newer
// response pushed while Interrupt runs is never clipped: only the responses
// the interrupt covers are dropped, and Interrupt(id) keeps responses newer
// than id that are already buffered. A slot tagged with a generation the
// consumer has not processed yet makes it process that interrupt first, so
// the consumer never acts on audio pushed after an interrupt before the
// interrupt itself.
//
// Guarantee: every Fill that starts after Interrupt returns hands the device
// no sample of an interrupted response except a fade-out of at most FadeMS
// (fadeLen-1 samples) taken from the slot that was playing, multiplied by a
// linear ramp down to zero. A Fill already running when Interrupt is called
// may still finish copying the slot it is in (at most SlotSamples) before
// it notices and fades.
//
// Response keys are session<<32 | response id, so they keep increasing
// when ResetSession lets ids restart from 1.
//
// # Events
//
// The consumer queues one Event per response it saw (Done or Interrupted,
// with the samples played) in a 64-entry lock-free SPSC queue that
// DrainEvents empties. If nobody drains, new events are dropped and counted
// (robot_agent_playback_events_dropped_total); they are never blocked on.
// A response whose every chunk was rejected as stale at PushPCM gets no
// event.
//
// # Fades and concealment
//
// Whenever output goes from audio to silence (underrun, end of response,
// interrupt) the player ramps linearly to zero over FadeMS instead of
// cutting: real samples if it has them (interrupt), else the last sample
// held (underrun, end). When a response resumes after an underrun it fades
// in over FadeMS. A response starts verbatim (TTS starts from silence). The
// largest step the device sees at a transition is therefore the signal's own
// step plus 32768/fadeLen.
package playback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// Limits and defaults.
const (
	sampleRate     = 24000 // hw.TTSFormat.SampleRate
	samplesPerMS   = sampleRate / 1000
	maxSlotSamples = sampleRate // 1 s
	maxSlots       = 1 << 16
	maxFadeMS      = 50
	maxPeriod      = sampleRate // 1 s

	DefaultSlotSamples  = 480 // 20 ms
	DefaultSlots        = 256 // ≈ 5 s of 20 ms slots
	DefaultPrebufferMS  = 60
	DefaultFadeMS       = 4
	DefaultPeriodFrames = 240 // 10 ms
)

// Errors.
var (
	// ErrInvalidConfig wraps every Config validation error.
	ErrInvalidConfig = errors.New("playback: invalid config")
	// ErrFull is returned by PushPCM when the ring overflowed and samples
	// were dropped (counted in overflow_dropped_samples_total).
	ErrFull = errors.New("playback: buffer full, samples dropped")
	// ErrStale is returned by PushPCM for a chunk of an interrupted (or
	// superseded) response; the chunk is dropped and counted.
	ErrStale = errors.New("playback: chunk of an interrupted or superseded response dropped")
	// ErrBadChunk wraps PushPCM input errors (response id 0, odd length).
	ErrBadChunk = errors.New("playback: bad chunk")
	// ErrSinkFormat is returned by Run for a sink not in hw.TTSFormat.
	ErrSinkFormat = errors.New("playback: sink format mismatch")
)

// Config sizes the jitter buffer. Zero fields take the defaults.
type Config struct {
	// SlotSamples is the size of one ring slot in samples (default 480 =
	// 20 ms at 24 kHz). Pushed chunks are split into slots; a chunk's last
	// slot may be partly filled.
	SlotSamples int
	// Slots is the number of ring slots, a power of two (default 256 ≈ 5 s).
	Slots int
	// PrebufferMS is how much audio must be buffered before a response
	// starts or resumes after an underrun, unless it has ended (default 60).
	// 1 means "start as soon as a slot arrives". At most half the ring.
	PrebufferMS int
	// FadeMS is the length of fade-outs and fade-ins (default 4).
	FadeMS int
	// PeriodFrames is how many frames Run writes per sink.Write when the
	// sink does not implement hw.Periodic (default 240 = 10 ms).
	PeriodFrames int
}

// withDefaults returns c with zero fields replaced by defaults.
func (c Config) withDefaults() Config {
	if c.SlotSamples == 0 {
		c.SlotSamples = DefaultSlotSamples
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.PrebufferMS == 0 {
		c.PrebufferMS = DefaultPrebufferMS
	}
	if c.FadeMS == 0 {
		c.FadeMS = DefaultFadeMS
	}
	if c.PeriodFrames == 0 {
		c.PeriodFrames = DefaultPeriodFrames
	}
	return c
}

// Validate reports the first invalid field of c (after defaults), as an
// error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...)
	}
	switch {
	case c.SlotSamples < 1 || c.SlotSamples > maxSlotSamples:
		return bad("SlotSamples=%d out of range [1, %d]", c.SlotSamples, maxSlotSamples)
	case c.Slots < 2 || c.Slots > maxSlots || c.Slots&(c.Slots-1) != 0:
		return bad("Slots=%d must be a power of two in [2, %d]", c.Slots, maxSlots)
	case c.PrebufferMS < 0:
		return bad("PrebufferMS=%d is negative", c.PrebufferMS)
	case 2*c.PrebufferMS*samplesPerMS > c.Slots*c.SlotSamples:
		return bad("PrebufferMS=%d needs %d samples, more than half the ring (Slots*SlotSamples = %d)",
			c.PrebufferMS, c.PrebufferMS*samplesPerMS, c.Slots*c.SlotSamples)
	case c.FadeMS < 0 || c.FadeMS > maxFadeMS:
		return bad("FadeMS=%d out of range [0, %d]", c.FadeMS, maxFadeMS)
	case c.PeriodFrames < 1 || c.PeriodFrames > maxPeriod:
		return bad("PeriodFrames=%d out of range [1, %d]", c.PeriodFrames, maxPeriod)
	}
	return nil
}

// Progress is the playback position of the current response.
type Progress struct {
	ResponseID    uint32 // 0 when no response is current
	SamplesPlayed int64
}

// consumer states
const (
	stIdle      = iota // no current response
	stPrebuffer        // current response waiting for PrebufferMS (start or after underrun)
	stPlaying
)

// Player is the jitter buffer and player. See the package doc for which
// goroutine may call which method.
type Player struct {
	cfg       Config
	clk       clock.Clock
	log       *slog.Logger
	ring      *Ring
	prebuffer int64 // samples
	fadeLen   int32 // samples; 1 = no fade

	// shared atomics
	gen     atomic.Uint32 // bumped by Interrupt/ResetSession
	cutoff  atomic.Uint64 // highest interrupted key
	maxSeen atomic.Uint64 // highest key pushed (producer stores)
	ended   atomic.Uint64 // highest key whose last chunk arrived (producer stores)
	session atomic.Uint64 // session number (producer stores)
	depth   atomic.Int64  // samples published and not yet consumed
	prog    atomic.Uint64 // current response id<<32 | samples played (uint32)

	events  eventQueue
	latency latencyRecorder

	// producer-private
	overflowing bool

	// consumer-private
	seenGen   uint32
	cut       uint64 // cutoff loaded when seenGen was observed
	cur       uint64 // key of current response, 0 if none
	played    int64  // samples of cur handed to the device
	reported  uint64 // highest key that got a final event
	state     int
	underrun  bool  // cur is in an underrun (concealment) episode
	off       int   // samples of the front slot already consumed
	gain      int32 // 0..fadeLen; output = src*gain/fadeLen
	rampUp    bool  // fading in
	fading    bool  // fading out; runs before anything else
	fadeSrc   *Slot // slot supplying real samples to an interrupt fade
	lastRaw   int16 // last source sample (held by fades)
	now       time.Duration
	fillPlay  int64 // per-Fill counters, flushed to metrics once per Fill
	fillConc  int64
	fillTaken int64

	m struct {
		underruns, concealed, flushes, stale, overflow, played, bad, eventsDropped *metrics.Counter
		depth                                                                      *metrics.Gauge
	}
}

// New returns a Player. reg may be nil (a private registry is used), log
// may be nil (logs are discarded); clk is required.
func New(cfg Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*Player, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		return nil, errors.New("playback: nil clock")
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	ring, err := NewRing(cfg.Slots, cfg.SlotSamples)
	if err != nil {
		return nil, err
	}
	p := &Player{
		cfg:       cfg,
		clk:       clk,
		log:       log,
		ring:      ring,
		prebuffer: int64(cfg.PrebufferMS * samplesPerMS),
		fadeLen:   int32(max(1, cfg.FadeMS*samplesPerMS)),
	}
	p.m.underruns = reg.Counter("robot_agent_playback_underruns_total", "Playback underruns in the middle of a response.")
	p.m.concealed = reg.Counter("robot_agent_playback_concealed_samples_total", "Samples of fade and silence output in place of missing audio during underruns.")
	p.m.flushes = reg.Counter("robot_agent_playback_flushes_total", "Interrupts (barge-ins) that flushed buffered audio.")
	p.m.stale = reg.Counter("robot_agent_playback_stale_frames_dropped_total", "TTS chunks dropped because their response was interrupted or superseded.")
	p.m.overflow = reg.Counter("robot_agent_playback_overflow_dropped_samples_total", "TTS samples dropped because the jitter buffer was full.")
	p.m.played = reg.Counter("robot_agent_playback_played_samples_total", "TTS samples handed to the speaker.")
	p.m.bad = reg.Counter("robot_agent_playback_bad_chunks_total", "TTS chunks rejected as malformed (response id 0, odd byte length).")
	p.m.eventsDropped = reg.Counter("robot_agent_playback_events_dropped_total", "Playback completion events dropped because DrainEvents fell behind.")
	p.m.depth = reg.Gauge("robot_agent_playback_depth_samples", "TTS samples buffered and not yet played.")
	p.gain = p.fadeLen
	log.Debug("playback: player ready", "slot_samples", cfg.SlotSamples, "slots", cfg.Slots,
		"prebuffer_ms", cfg.PrebufferMS, "fade_ms", cfg.FadeMS)
	return p, nil
}

// Config returns the effective configuration (defaults applied).
func (p *Player) Config() Config { return p.cfg }

// key makes the internal response key for id in the current session.
func (p *Player) key(id uint32) uint64 { return p.session.Load()<<32 | uint64(id) }

// ---- producer side ----

// PushPCM converts a chunk of PCM16LE 24 kHz mono audio of response
// responseID into ring slots and publishes them. Producer goroutine only;
// never blocks, never allocates on success.
//
// Errors: ErrBadChunk (wrapped, with details) for id 0 or an odd byte
// count; ErrStale if the response was interrupted, or is older than a
// response already pushed (chunk dropped, stale_frames_dropped_total
// counts one per chunk); ErrFull if the ring filled up (the samples that
// did not fit are dropped and counted, those that fit are kept).
func (p *Player) PushPCM(responseID uint32, pcmLE []byte) error {
	if responseID == 0 {
		p.m.bad.Inc()
		return fmt.Errorf("%w: response id 0", ErrBadChunk)
	}
	if len(pcmLE)%2 != 0 {
		p.m.bad.Inc()
		return fmt.Errorf("%w: response %d: odd PCM16 byte length %d", ErrBadChunk, responseID, len(pcmLE))
	}
	key := p.key(responseID)
	if seen := p.maxSeen.Load(); key < seen {
		p.m.stale.Inc() // superseded: a newer response already started
		return ErrStale
	} else if key > seen {
		// Published before the generation load so that a concurrent
		// Interrupt(0) either sees this response (and covers it) or not
		// (and the chunk plays); see the package doc.
		p.maxSeen.Store(key)
	}
	gen := p.gen.Load()
	if key <= p.cutoff.Load() {
		p.m.stale.Inc()
		return ErrStale
	}
	if len(pcmLE) == 0 {
		return nil
	}
	now := p.clk.Mono()
	total := len(pcmLE) / 2
	for done := 0; done < total; {
		s := p.ring.Reserve()
		if s == nil {
			p.m.overflow.Add(int64(total - done))
			if !p.overflowing {
				p.overflowing = true
				p.log.Warn("playback: buffer full, dropping TTS audio", "response_id", responseID,
					"dropped_samples", total-done)
			}
			return ErrFull
		}
		n := min(len(s.buf), total-done)
		pcm.BytesToInt16(s.buf[:n], pcmLE[2*done:2*(done+n)])
		s.N, s.Resp, s.Gen, s.Pushed = n, key, gen, now
		p.ring.Commit()
		p.depth.Add(int64(n))
		p.m.depth.Add(int64(n))
		done += n
	}
	p.overflowing = false
	return nil
}

// EndResponse records that the last chunk of responseID has been pushed:
// the response no longer waits for its prebuffer, its end is not an
// underrun, and an EventDone is emitted once its last sample is played.
// Producer goroutine only, after the response's last PushPCM.
func (p *Player) EndResponse(responseID uint32) {
	if responseID == 0 {
		return
	}
	key := p.key(responseID)
	if key <= p.cutoff.Load() || key <= p.ended.Load() {
		return
	}
	p.ended.Store(key)
}

// ResetSession starts a new gateway session: everything buffered is
// flushed as by Interrupt(0) and response ids may start again from 1.
// Producer goroutine only, before the new session's first PushPCM.
func (p *Player) ResetSession() {
	s := p.session.Add(1)
	base := s << 32
	p.maxSeen.Store(base)
	p.raiseCutoff(base - 1) // every key of earlier sessions
	p.gen.Add(1)
	p.m.flushes.Inc()
}

// ---- any goroutine ----

// Interrupt stops playback of responseID and every earlier response
// (barge-in). responseID 0 means every response pushed so far. It is O(1),
// never blocks, may be called from any goroutine, and returns the response
// id it cut up to (0 if nothing was pushed yet). Chunks of the interrupted
// responses that arrive later are dropped; a newer response pushed after
// Interrupt returns plays normally. See the package doc for the exact
// guarantee and the fade.
func (p *Player) Interrupt(responseID uint32) uint32 {
	var key uint64
	if responseID == 0 {
		key = p.maxSeen.Load()
		if uint32(key) == 0 {
			return 0 // nothing pushed in this session
		}
	} else {
		key = p.key(responseID)
	}
	if p.raiseCutoff(key) {
		p.m.flushes.Inc()
	}
	// Always bump, even if another Interrupt raised the cutoff first: this
	// call must not return before the consumer can see a new generation.
	p.gen.Add(1)
	return uint32(key)
}

// raiseCutoff sets cutoff = max(cutoff, key); it reports whether it changed.
func (p *Player) raiseCutoff(key uint64) bool {
	for {
		old := p.cutoff.Load()
		if key <= old {
			return false
		}
		if p.cutoff.CompareAndSwap(old, key) {
			return true
		}
	}
}

// Progress returns the current response and how many of its samples have
// been handed to the device, as of the end of the last Fill. Any goroutine.
func (p *Player) Progress() Progress {
	v := p.prog.Load()
	return Progress{ResponseID: uint32(v >> 32), SamplesPlayed: int64(uint32(v))}
}

// Depth returns the number of buffered samples not yet played. Any
// goroutine.
func (p *Player) Depth() int { return int(max(0, p.depth.Load())) }

// Latencies returns the nearest-rank median and 99th percentile of the time
// from PushPCM to the Fill that handed a slot's first sample to the device,
// over the most recent measurements (at most 4096; one per slot), and how
// many measurements that is. Any goroutine; allocates.
func (p *Player) Latencies() (p50, p99 time.Duration, n int) {
	p50, p99, n, _ = p.latency.percentiles()
	return p50, p99, n
}

// DrainEvents calls fn for every pending completion event, oldest first,
// and returns how many it delivered. Call it from one (non-real-time)
// goroutine at a time, e.g. on a ticker. The queue holds 64 events; when it
// is full new events are dropped and counted in
// robot_agent_playback_events_dropped_total.
func (p *Player) DrainEvents(fn func(Event)) int { return p.events.drain(fn) }

// ---- consumer side ----

// Run plays until ctx is done or the sink fails: it loops Fill + Write with
// the sink's period (hw.Periodic) or Config.PeriodFrames. The sink must be
// in hw.TTSFormat. Consumer goroutine only; do not mix with Fill from
// another goroutine. Write blocking is the pacing; a Write blocked forever
// is only ended by closing the sink. Returns ctx.Err() on cancellation.
func (p *Player) Run(ctx context.Context, sink hw.AudioSink) error {
	if f := sink.Format(); f != hw.TTSFormat {
		return fmt.Errorf("%w: sink is %v, want %v", ErrSinkFormat, f, hw.TTSFormat)
	}
	period := p.cfg.PeriodFrames
	if ps, ok := sink.(hw.Periodic); ok {
		if n := ps.PeriodFrames(); n > 0 && n <= maxPeriod {
			period = n
		}
	}
	buf := make([]int16, period)
	done := ctx.Done()
	p.log.Info("playback: running", "sink", sink.Format().String(), "period_frames", period)
	for {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		p.Fill(buf)
		if err := sink.Write(buf); err != nil {
			return fmt.Errorf("playback: sink write: %w", err)
		}
	}
}

// Fill writes exactly len(dst) samples for the device: audio, fades or
// silence. Consumer only (one goroutine or device callback at a time);
// never blocks, never allocates.
func (p *Player) Fill(dst []int16) {
	if len(dst) == 0 {
		return
	}
	p.now = p.clk.Mono()
	p.fillPlay, p.fillConc, p.fillTaken = 0, 0, 0
	for i := 0; i < len(dst); {
		if g := p.gen.Load(); g != p.seenGen {
			p.onInterrupt(g)
		}
		if p.fading {
			i += p.fadeOut(dst[i:])
			continue
		}
		switch p.state {
		case stIdle:
			s, retry := p.next()
			if retry {
				continue
			}
			if s == nil {
				i += p.silence(dst[i:])
				continue
			}
			p.begin(s.Resp)
		case stPrebuffer:
			if !p.ready() {
				i += p.silence(dst[i:])
				continue
			}
			p.state = stPlaying
			switch {
			case p.underrun:
				p.underrun = false
				p.rampUp = true // resume with a fade-in
			case p.gain == 0:
				p.gain = p.fadeLen // a response starts verbatim
			case p.gain < p.fadeLen:
				p.rampUp = true // finish a fade-in cut short by a response change
			}
		case stPlaying:
			// Load ended before looking at the ring: EndResponse follows
			// the last Commit, so if we see it we also see every slot.
			ended := p.ended.Load() >= p.cur
			s, retry := p.next()
			switch {
			case retry:
			case s == nil && ended:
				p.finish(EventDone)
			case s == nil:
				p.m.underruns.Inc()
				p.underrun = true
				p.state = stPrebuffer
			case s.Resp != p.cur:
				p.finish(EventDone) // a newer response started
			default:
				i += p.play(s, dst[i:])
			}
		}
	}
	if p.fillTaken != 0 {
		p.depth.Add(-p.fillTaken)
		p.m.depth.Add(-p.fillTaken)
	}
	if p.fillPlay != 0 {
		p.m.played.Add(p.fillPlay)
	}
	if p.fillConc != 0 {
		p.m.concealed.Add(p.fillConc)
	}
	p.prog.Store(uint64(uint32(p.cur))<<32 | uint64(uint32(min(p.played, 1<<32-1))))
}

// onInterrupt handles a generation change seen by the consumer.
func (p *Player) onInterrupt(g uint32) {
	p.seenGen = g
	p.cut = p.cutoff.Load() // loaded after gen: at least the cutoff of g
	if p.cur == 0 || p.cur > p.cut {
		return
	}
	played := p.played
	if p.state == stPlaying && p.gain > 1 {
		p.fading, p.rampUp = true, false
		if s := p.ring.Front(); s != nil && s.Resp == p.cur && p.off < s.N {
			p.fadeSrc = s
			// The fade emits gain-1 samples; that many real ones if the
			// slot has them. Count them now so the event is exact.
			played += int64(min(int(p.gain)-1, s.N-p.off))
		}
	}
	p.emit(EventInterrupted, p.cur, played)
	p.cur, p.played, p.state, p.underrun = 0, 0, stIdle, false
}

// next returns the front slot after dropping slots of interrupted
// responses. retry is true when the front slot carries a generation the
// consumer has not processed yet: the caller must restart its loop so that
// the interrupt is handled before any slot pushed after it.
func (p *Player) next() (s *Slot, retry bool) {
	for {
		s := p.ring.Front()
		if s == nil {
			return nil, false
		}
		if s.Gen != p.seenGen && p.gen.Load() != p.seenGen {
			return nil, true
		}
		// Keep a slot unless it predates an interrupt the consumer has seen
		// (old generation tag) and that interrupt covers its response. A
		// response that already got its final event never plays again
		// (this also drops slots of a response whose interrupt was still
		// in flight when its generation was tagged).
		if (s.Gen == p.seenGen || s.Resp > p.cut) && s.Resp > p.reported {
			return s, false
		}
		p.fillTaken += int64(s.N - p.off)
		p.off = 0
		p.ring.Release()
		if s.Resp > p.reported && s.Resp <= p.cut {
			p.emit(EventInterrupted, s.Resp, 0)
		}
	}
}

// begin makes key the current response, waiting for its prebuffer.
func (p *Player) begin(key uint64) {
	p.cur, p.played, p.state, p.underrun = key, 0, stPrebuffer, false
}

// finish ends the current response with an event.
func (p *Player) finish(kind EventKind) {
	p.emit(kind, p.cur, p.played)
	p.cur, p.played, p.state, p.underrun = 0, 0, stIdle, false
}

// ready reports whether the current response may (re)start playing.
func (p *Player) ready() bool {
	if p.depth.Load()-p.fillTaken >= p.prebuffer || p.ended.Load() >= p.cur {
		return true
	}
	s := p.ring.Front()
	return s != nil && s.Resp > p.cur // cur is over: let stPlaying finish it
}

// play copies samples of the front slot s (current response) into dst.
func (p *Player) play(s *Slot, dst []int16) int {
	if p.off == 0 {
		p.latency.record(p.now - s.Pushed)
	}
	n := min(len(dst), s.N-p.off)
	src := s.buf[p.off : p.off+n]
	if p.gain == p.fadeLen && !p.rampUp {
		copy(dst, src)
	} else {
		L := p.fadeLen
		for j, v := range src {
			if p.rampUp {
				if p.gain < L {
					p.gain++
				}
				if p.gain == L {
					p.rampUp = false
				}
			}
			dst[j] = int16(int32(v) * p.gain / L)
		}
	}
	p.lastRaw = src[n-1]
	p.off += n
	p.played += int64(n)
	p.fillPlay += int64(n)
	p.fillTaken += int64(n)
	if p.off == s.N {
		p.off = 0
		p.ring.Release()
	}
	return n
}

// silence fills dst with silence, starting a fade-out first if the device
// last heard audio. It returns how many samples it wrote (0 when it only
// started a fade).
func (p *Player) silence(dst []int16) int {
	if p.gain > 1 {
		p.fading, p.rampUp = true, false
		return 0
	}
	p.gain = 0
	clear(dst)
	if p.underrun {
		p.fillConc += int64(len(dst))
	}
	return len(dst)
}

// fadeOut emits the fade-out ramp: gain steps down by one per sample and
// the fade ends when it reaches zero, so it is gain-1 samples long. Source
// samples come from fadeSrc (interrupt) while it has any, else the last
// source sample is held.
func (p *Player) fadeOut(dst []int16) int {
	L := p.fadeLen
	n := 0
	for n < len(dst) {
		p.gain--
		if p.gain <= 0 {
			p.gain = 0
			break
		}
		v := p.lastRaw
		if s := p.fadeSrc; s != nil && p.off < s.N {
			if p.off == 0 {
				p.latency.record(p.now - s.Pushed)
			}
			v = s.buf[p.off]
			p.off++
			p.fillPlay++
			p.fillTaken++
			p.lastRaw = v
		}
		dst[n] = int16(int32(v) * p.gain / L)
		n++
	}
	if p.underrun {
		p.fillConc += int64(n)
	}
	if p.gain == 0 {
		p.fading, p.fadeSrc = false, nil
	}
	return n
}

// emit queues a completion event, counting it if the queue is full.
func (p *Player) emit(kind EventKind, key uint64, played int64) {
	p.reported = max(p.reported, key)
	if !p.events.push(Event{Kind: kind, ResponseID: uint32(key), SamplesPlayed: played, At: p.now}) {
		p.m.eventsDropped.Inc()
	}
}
