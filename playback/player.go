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
// Two policies: PolicyAdaptive (default; adaptive.go) keeps the buffer near
// a target delay estimated from arrival jitter (package jitter) and moves
// towards it by pitch-preserving time-stretching (package timestretch);
// PolicyStall is the original stall-and-rebuffer player.
//
// Storage: the ring's slot headers cover the whole cap (Config.Slots,
// ≈ 327 s by default) but sample storage is allocated in chunks of
// ChunkSlots as the buffer deepens and reused after, so memory follows the
// deepest the buffer has been. When the cap is reached the rest of that
// response is dropped (ErrFull; Event.SamplesLost), so what plays is a
// prefix of the response.
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
// linear ramp down to zero. When Run's sink implements hw.Flusher (found
// through Unwrap() hw.AudioSink wrappers), Interrupt also flushes the
// device: the device fades what it is playing within 4 ms and the player's
// next Fill goes straight to silence (no second fade after the device went
// quiet), so the first silent sample comes within the device fade instead
// of after the period being played. A Fill already running when Interrupt is called
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
	"math"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/jitter"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/timestretch"
)

// Limits and defaults.
const (
	sampleRate     = 24000 // hw.TTSFormat.SampleRate
	samplesPerMS   = sampleRate / 1000
	maxSlotSamples = sampleRate // 1 s
	maxSlots       = 1 << 16
	maxFadeMS      = 50
	maxPeriod      = sampleRate // 1 s

	DefaultSlotSamples  = 480   // 20 ms
	DefaultSlots        = 16384 // ≈ 327 s of 20 ms slots: a 5-minute reply fits whole
	DefaultChunkSlots   = 64    // storage grows by 64 slots (1.28 s, 61 KiB) at a time
	DefaultPreallocMS   = 10000 // storage allocated by New
	DefaultPrebufferMS  = 60
	DefaultFadeMS       = 4
	DefaultPeriodFrames = 240 // 10 ms
	DefaultMinDelayMS   = 20
	DefaultMaxDelayMS   = 2000
	DefaultStretchPct   = 5
	DefaultCatchUpPct   = 40
	DefaultExpandPct    = 25
	// DefaultConcealBudget: under the 1 % of issue 11 with a margin.
	DefaultConcealBudget = 0.009
)

// Policy is how the player reacts to jitter.
type Policy uint8

func (p Policy) String() string {
	switch p {
	case PolicyAdaptive:
		return "adaptive"
	case PolicyStall:
		return "stall"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Policies.
const (
	// PolicyAdaptive (default) keeps the buffer near a target delay
	// estimated from arrival jitter (package jitter), converging to it by
	// pitch-preserving time-stretching (package timestretch); an underrun
	// is concealed with a fade and playback resumes as soon as the target
	// (at most PrebufferMS) is buffered again, the extra delay being
	// removed afterwards by accelerating.
	PolicyAdaptive Policy = iota
	// PolicyStall is the original stall-and-rebuffer player: it waits for
	// PrebufferMS at the start and after every underrun and never
	// stretches, so every underrun adds delay for the rest of the response.
	PolicyStall
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

	// Policy selects adaptive playout (default) or stall-and-rebuffer.
	Policy Policy
	// ChunkSlots is how many slots of storage the ring allocates at a time
	// when it grows (power of two, default 64); PreallocMS how much audio
	// storage New allocates (default 10 s). The ring never holds more than
	// Slots*SlotSamples samples (the cap).
	ChunkSlots int
	PreallocMS int
	// MinDelayMS and MaxDelayMS bound the adaptive target delay (defaults
	// 20 and 2000 ms).
	MinDelayMS, MaxDelayMS int
	// StretchPct is the most the adaptive player speeds up or slows down
	// playback, in percent of real time (default 5; negative: never
	// stretch, the adaptive start/resume and concealment stay).
	StretchPct int
	// CatchUpPct is the speed-up used while the buffer is more than 20 ms
	// above target (after an underrun or a burst), default 40.
	CatchUpPct int
	// ExpandPct is the most the adaptive player slows down while the
	// buffer drains because arrivals are late (more than one chunk below
	// target), default 25: what is buffered lasts longer and less of a
	// network block is concealed with silence.
	ExpandPct int
	// ConcealBudget is the share of the output the adaptive player aims
	// to conceal at most (default 0.009): it widens or narrows the jitter
	// quantile it targets until the concealed share settles there, quickly
	// in the first minute and slowly from about three minutes on. An
	// outage counts for at most 1 s at once; the rest of it is counted
	// over the following minutes. A lower budget buys less concealment
	// with more delay (the controller's start and bounds scale with it);
	// at low budgets the player usually conceals less than the budget.
	ConcealBudget float64
	// Jitter tunes the delay estimator (zero fields: jitter defaults).
	Jitter jitter.Config
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
	if c.ChunkSlots == 0 {
		c.ChunkSlots = min(DefaultChunkSlots, c.Slots)
	}
	if c.PreallocMS == 0 {
		c.PreallocMS = DefaultPreallocMS
	}
	if c.MinDelayMS == 0 {
		c.MinDelayMS = DefaultMinDelayMS
	}
	if c.MaxDelayMS == 0 {
		c.MaxDelayMS = DefaultMaxDelayMS
	}
	if c.StretchPct == 0 {
		c.StretchPct = DefaultStretchPct
	}
	if c.CatchUpPct == 0 {
		c.CatchUpPct = DefaultCatchUpPct
	}
	if c.ExpandPct == 0 {
		c.ExpandPct = DefaultExpandPct
	}
	if c.ConcealBudget == 0 {
		c.ConcealBudget = DefaultConcealBudget
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
	case c.Policy > PolicyStall:
		return bad("Policy=%d unknown", c.Policy)
	case c.ChunkSlots < 1 || c.ChunkSlots > c.Slots || c.ChunkSlots&(c.ChunkSlots-1) != 0:
		return bad("ChunkSlots=%d must be a power of two in [1, Slots=%d]", c.ChunkSlots, c.Slots)
	case c.PreallocMS < 0:
		return bad("PreallocMS=%d is negative", c.PreallocMS)
	case c.MinDelayMS < 0 || c.MaxDelayMS < c.MinDelayMS || c.MaxDelayMS > 60000:
		return bad("MinDelayMS=%d MaxDelayMS=%d must satisfy 0 <= MinDelayMS <= MaxDelayMS <= 60000", c.MinDelayMS, c.MaxDelayMS)
	case c.CatchUpPct < 1 || c.CatchUpPct > 50:
		return bad("CatchUpPct=%d out of range [1, 50]", c.CatchUpPct)
	case !(c.ConcealBudget > 0 && c.ConcealBudget < 0.5):
		return bad("ConcealBudget=%g out of range (0, 0.5)", c.ConcealBudget)
	case c.ExpandPct < 1 || c.ExpandPct > 50:
		return bad("ExpandPct=%d out of range [1, 50]", c.ExpandPct)
	case c.StretchPct > 25:
		return bad("StretchPct=%d out of range [1, 25] (negative disables stretching)", c.StretchPct)
	}
	if err := c.Jitter.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
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
	// depthHist: buffered audio while a response plays (metrics.go).
	depthHist *metrics.Histogram

	// device flush on interrupt (Run with an hw.Flusher sink)
	fl         atomic.Pointer[hw.Flusher]
	flushedGen atomic.Uint32 // generation whose interrupt the device already faded

	// producer-private
	overflowing bool
	dm          *jitter.Manager
	pKey        uint64 // response the producer is pushing
	pPos        int64  // samples of pKey pushed so far
	truncated   uint64 // last response that overflowed (rest dropped)

	// producer-written, any goroutine reads
	lostKey        atomic.Uint64 // response that lost samples to overflow
	lostN          atomic.Int64  // samples lost by lostKey
	lostTotal      atomic.Int64  // samples lost, ever
	peak           atomic.Int64  // deepest the buffer has been, samples
	chunkEMA       atomic.Int64  // typical pushed chunk, samples
	stretchedTotal atomic.Int64
	playedTotal    atomic.Int64
	sourceTotal    atomic.Int64
	concealedTotal atomic.Int64
	underrunTotal  atomic.Int64

	ad adaptive // consumer-private adaptive state

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
	fillSrc   int64 // time-stretch credits applied this Fill (source samples)
	fillPlay  int64 // per-Fill counters, flushed to metrics once per Fill
	fillConc  int64
	fillTaken int64

	m struct {
		underruns, concealed, flushes, stale, overflow, played, bad, eventsDropped *metrics.Counter
		accelerated, decelerated, truncated                                        *metrics.Counter
		depth, peak, target                                                        *metrics.Gauge
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
	ring, err := NewGrowableRing(cfg.Slots, cfg.SlotSamples, cfg.ChunkSlots, cfg.PreallocMS*samplesPerMS/cfg.SlotSamples)
	if err != nil {
		return nil, err
	}
	dm, err := jitter.New(cfg.Jitter)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	st, err := timestretch.New(timestretch.Config{SampleRate: sampleRate})
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
		dm:        dm,
	}
	p.ad.init(cfg, st)
	dm.SetTailScale(math.Exp(p.ad.logTail))
	p.m.underruns = reg.Counter("robot_agent_playback_underruns_total", "Playback underruns in the middle of a response.")
	p.m.concealed = reg.Counter("robot_agent_playback_concealed_samples_total", "Samples of fade and silence output in place of missing audio during underruns.")
	p.m.flushes = reg.Counter("robot_agent_playback_flushes_total", "Interrupts (barge-ins) that flushed buffered audio.")
	p.m.stale = reg.Counter("robot_agent_playback_stale_frames_dropped_total", "TTS chunks dropped because their response was interrupted or superseded.")
	p.m.overflow = reg.Counter("robot_agent_playback_overflow_dropped_samples_total", "TTS samples dropped because the jitter buffer was full.")
	p.m.played = reg.Counter("robot_agent_playback_played_samples_total", "TTS samples handed to the speaker.")
	p.m.bad = reg.Counter("robot_agent_playback_bad_chunks_total", "TTS chunks rejected as malformed (response id 0, odd byte length).")
	p.m.eventsDropped = reg.Counter("robot_agent_playback_events_dropped_total", "Playback completion events dropped because DrainEvents fell behind.")
	p.m.depth = reg.Gauge("robot_agent_playback_depth_samples", "TTS samples buffered and not yet played.")
	p.m.peak = reg.Gauge("robot_agent_playback_peak_depth_samples", "Deepest the TTS buffer has been, in samples.")
	p.m.target = reg.Gauge("robot_agent_playback_target_delay_samples", "Adaptive playout target delay, in samples.")
	p.m.accelerated = reg.Counter("robot_agent_playback_accelerated_samples_total", "Samples removed by pitch-preserving time compression.")
	p.m.decelerated = reg.Counter("robot_agent_playback_decelerated_samples_total", "Samples inserted by pitch-preserving time expansion.")
	p.m.truncated = reg.Counter("robot_agent_playback_truncated_responses_total", "Responses cut short because the buffer cap was reached (overflow).")
	p.registerHistograms(reg) // metrics.go
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
	if key != p.pKey {
		p.pKey, p.pPos = key, 0
		p.dm.Reset()
	}
	if key == p.truncated {
		// The response already overflowed: the rest of it is dropped too,
		// so what plays is a prefix and samples_played stays meaningful.
		p.lose(key, int64(total))
		return ErrFull
	}
	p.dm.Arrive(now, p.pPos)
	p.pPos += int64(total)
	if c := p.chunkEMA.Load(); c == 0 {
		p.chunkEMA.Store(int64(total))
	} else {
		p.chunkEMA.Store(c + (int64(total)-c)/8)
	}
	for done := 0; done < total; {
		s := p.ring.Reserve()
		if s == nil {
			p.truncated = key
			p.m.truncated.Inc()
			p.lose(key, int64(total-done))
			if !p.overflowing {
				p.overflowing = true
				p.log.Warn("playback: buffer full, dropping the rest of the response", "response_id", responseID,
					"dropped_samples", total-done, "cap_samples", p.ring.Cap()*p.ring.SlotSamples())
			}
			return ErrFull
		}
		n := min(len(s.buf), total-done)
		pcm.BytesToInt16(s.buf[:n], pcmLE[2*done:2*(done+n)])
		s.N, s.Resp, s.Gen, s.Pushed = n, key, gen, now
		p.ring.Commit()
		d := p.depth.Add(int64(n))
		p.m.depth.Add(int64(n))
		if d > p.peak.Load() {
			p.peak.Store(d)
			p.m.peak.Set(d)
		}
		done += n
	}
	p.overflowing = false
	return nil
}

// lose counts n samples of response key dropped by overflow. Producer only.
func (p *Player) lose(key uint64, n int64) {
	p.m.overflow.Add(n)
	p.lostTotal.Add(n)
	if p.lostKey.Load() != key {
		p.lostN.Store(0)
		p.lostKey.Store(key)
	}
	p.lostN.Add(n)
}

// PeakDepth returns the deepest the buffer has been since New, in samples.
// Any goroutine.
func (p *Player) PeakDepth() int64 { return p.peak.Load() }

// LostSamples returns how many samples were dropped because the buffer cap
// was reached (overflow), since New. Any goroutine.
func (p *Player) LostSamples() int64 { return p.lostTotal.Load() }

// CapacitySamples is the buffer cap: the most audio the player holds when
// every slot is full (chunks that are whole multiples of SlotSamples).
func (p *Player) CapacitySamples() int { return p.ring.Cap() * p.ring.SlotSamples() }

// GuaranteedSamples is how much audio the player holds whatever the chunk
// sizes, as long as chunks are at least SlotSamples/2 long (10 ms by
// default): a chunk of n samples takes ceil(n/SlotSamples) slots, so at
// worst half of each slot is used. This is what the robot advertises to
// the gateway for pacing (docs/protocol.md §7.7).
func (p *Player) GuaranteedSamples() int { return p.CapacitySamples() / 2 }

// Stats are cumulative playout counters (for replay tools and summaries).
type Stats struct {
	// Played counts samples handed to the device (not concealment);
	// Source the source samples they stand for (time-stretching removes
	// or inserts some); Concealed the fade and silence samples output in
	// underruns; Stretched the samples removed or inserted; Lost the
	// samples dropped by overflow; Peak the deepest buffer.
	Played, Source, Concealed, Stretched, Lost, Peak int64
	Underruns                                        int64
	AllocatedSamples                                 int64 // ring storage in samples
}

// Stats returns the cumulative counters. Any goroutine.
func (p *Player) Stats() Stats {
	return Stats{
		Played: p.playedTotal.Load(), Source: p.sourceTotal.Load(), Concealed: p.concealedTotal.Load(),
		Stretched: p.stretchedTotal.Load(), Lost: p.lostTotal.Load(), Peak: p.peak.Load(),
		Underruns:        p.underrunTotal.Load(),
		AllocatedSamples: int64(p.ring.AllocatedSlots() * p.ring.SlotSamples()),
	}
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
	p.flushDevice(p.gen.Add(1))
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
	p.flushDevice(p.gen.Add(1))
	return uint32(key)
}

// flushDevice discards what the device has queued (hw.Flusher, when Run's
// sink has it; the device fades it out within 4 ms) and then records that
// generation g's fade was done by the device, so that the consumer goes
// straight to silence instead of fading the interrupted audio again after
// the device went quiet. If the consumer handles g before this record (the
// device finished its block just then) it fades as usual and the device's
// fade only lowers that further.
func (p *Player) flushDevice(g uint32) {
	if f := p.fl.Load(); f != nil {
		(*f).Flush()
		p.flushedGen.Store(g)
	}
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
	if f, ok := hw.FindSink[hw.Flusher](sink); ok {
		p.fl.Store(&f)
		defer p.fl.Store(nil)
	}
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
	p.fillPlay, p.fillConc, p.fillTaken, p.fillSrc = 0, 0, 0, 0
	if p.cfg.Policy == PolicyAdaptive {
		p.fillAdaptive(dst)
	} else {
		p.fillStall(dst)
	}
	if p.cfg.Policy == PolicyAdaptive {
		p.budget()
	}
	p.flushFill()
}

// fillStall is Fill for PolicyStall (and the shared state machine).
func (p *Player) fillStall(dst []int16) {
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
				p.underrunTotal.Add(1)
				p.underrun = true
				p.state = stPrebuffer
			case s.Resp != p.cur:
				p.finish(EventDone) // a newer response started
			default:
				i += p.play(s, dst[i:])
			}
		}
	}
}

// flushFill publishes the per-Fill counters.
func (p *Player) flushFill() {
	if p.fillTaken != 0 {
		p.depth.Add(-p.fillTaken)
		p.m.depth.Add(-p.fillTaken)
	}
	p.observeDepth()
	if p.fillPlay != 0 {
		p.m.played.Add(p.fillPlay)
		p.playedTotal.Add(p.fillPlay)
	}
	if p.fillPlay+p.fillSrc != 0 {
		p.sourceTotal.Add(p.fillPlay + p.fillSrc)
	}
	if p.fillConc != 0 {
		p.m.concealed.Add(p.fillConc)
		p.concealedTotal.Add(p.fillConc)
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
	adaptive := p.cfg.Policy == PolicyAdaptive
	if p.flushedGen.Load() == g && p.gain > 0 {
		// The device already faded this audio out (hw.Flusher): silence.
		p.gain, p.rampUp = 0, false
	}
	if p.state == stPlaying && p.gain > 1 {
		p.fading, p.rampUp = true, false
		if adaptive {
			if n := p.ad.len(); n > 0 {
				p.ad.fromStage = true
				played += int64(min(int(p.gain)-1, n))
			}
		} else if s := p.ring.Front(); s != nil && s.Resp == p.cur && p.off < s.N {
			p.fadeSrc = s
			// The fade emits gain-1 samples; that many real ones if the
			// slot has them. Count them now so the event is exact.
			played += int64(min(int(p.gain)-1, s.N-p.off))
		}
	}
	if adaptive && !p.ad.fromStage {
		p.ad.clear()
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
	p.copyRamp(dst, src)
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
		if a := &p.ad; a.fromStage && a.rd < a.wr {
			v = a.buf[a.rd]
			a.rd++
			p.fillPlay++
			p.lastRaw = v
		} else if s := p.fadeSrc; s != nil && p.off < s.N {
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
		if p.ad.fromStage {
			p.ad.clear()
		}
	}
	return n
}

// emit queues a completion event, counting it if the queue is full.
func (p *Player) emit(kind EventKind, key uint64, played int64) {
	p.reported = max(p.reported, key)
	e := Event{Kind: kind, ResponseID: uint32(key), SamplesPlayed: played, At: p.now}
	if p.lostKey.Load() == key {
		e.SamplesLost = p.lostN.Load()
	}
	if !p.events.push(e) {
		p.m.eventsDropped.Inc()
	}
}

// copyRamp copies src into dst (len(dst) >= len(src)), applying the fade-in
// ramp while one is running (consumer only; no allocation).
func (p *Player) copyRamp(dst, src []int16) {
	if p.gain == p.fadeLen && !p.rampUp {
		copy(dst, src)
		return
	}
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
