package capture

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
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/vad"
)

// slot is one frame buffer of the pre-roll ring.
type slot struct {
	samples []int16
	ts      time.Duration
}

type gateRef struct{ g Gate }

// Pump reads the mic and feeds a FrameSink. See the package documentation.
type Pump struct {
	cfg      Config // with defaults
	vad      bool
	src      hw.AudioSource
	sink     FrameSink
	clk      clock.Clock
	log      *slog.Logger
	frameDur time.Duration
	running  atomic.Bool
	gate     atomic.Pointer[gateRef]

	frames, dropped, utterances, readErrors *metrics.Counter
	bgFrames, silent                        *metrics.Counter
	bgGauge                                 *metrics.Gauge

	// det replaces the built-in energy decision (nil: energy); detAdapt is
	// det when it learns the noise (vad.Adapter).
	det      vad.Detector
	detAdapt vad.Adapter
	// detBG is det when it has a speech-like background guard; bgOn is
	// the guard's state at the last frame (Run goroutine).
	detBG vad.BackgroundGuarded
	// detProv is det when its speech calls can be provisional (the
	// spectral detector's onset step): no utterance starts on them.
	detProv vad.Provisional
	bgOn    bool
	// auto: vad.detector auto (det is spectral); useEnergy: auto with an
	// onset guard, so the built-in energy decision is used.
	auto, useEnergy bool
	// guard is the source's OnsetGuard, if it has one (or SetOnsetGuard's).
	guard OnsetGuard
	// dsig is the guard's DecisionSignal, if it has one.
	dsig DecisionSignal
	// echoFree is the guard's EchoFree, if it has one.
	echoFree EchoFree
	// osig is the guard's OnsetSignal, if it has one.
	osig OnsetSignal
	// trans is the VAD's transient guard (nil: off). Run goroutine:
	// transHeld: it held the current run of speech frames at or past min
	// speech; transRun: that run's length so far; heldLen, heldAgo: the
	// last such held run's length and the frames since it ended (heldLen 0:
	// none within retroFrames); retro: extra pre-roll frames for the
	// current run (see transientFrame); retroFrames, maxRetro: the limits.
	trans                        *vad.TransientGuard
	transHeld                    bool
	transRun, heldLen, heldAgo   int
	retro, retroFrames, maxRetro int
	transient                    *metrics.Counter

	// VAD parameters in frames / dB per frame.
	preFrames, minSpeechFrames, hangFrames, maxFrames int
	gradualFrames                                     int // min speech after a gradual onset (≤ minSpeechFrames)

	// State owned by the Run goroutine.
	ring         []slot
	head         int // slot the next frame is read into
	held         int // frames held before head (VAD idle pre-roll)
	frame        Frame
	seq          uint32
	utt          uint32
	lastTS       time.Duration
	haveTS       bool
	inUtt        bool
	startPending bool
	uttFrames    int
	floor        vad.Floor // the energy detector's noise floor
	// background counts the frames judged outside utterances as the
	// room's background (not speech, echo, gated or lost), up to
	// lostFrames: with that many the VAD knows the room (see silence).
	background, lostFrames int
	roomAudible            bool         // the last background frame was above lostRoomDBFS
	lostSrc                LostReporter // the source's, if it has one
	speechRun              int
	silentRun              int
	// bridged: the current run of speech frames has bridged its one
	// frame (runFrame); runRoom: its last speech frame was one the echo
	// canceller let through (OnsetSignal's use flag).
	bridged, runRoom bool
}

// NewPump returns a Pump reading src (which must be hw.MicFormat) into sink.
// reg and log may be nil.
func NewPump(cfg Config, src hw.AudioSource, sink FrameSink, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*Pump, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if src == nil || sink == nil || clk == nil {
		return nil, errors.New("capture: NewPump needs a source, a sink and a clock")
	}
	if f := src.Format(); f != hw.MicFormat {
		return nil, fmt.Errorf("%w: source is %v, want %v (no format conversion yet)", ErrFormat, f, hw.MicFormat)
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.WithDefaults()
	p := &Pump{
		cfg:        cfg,
		vad:        cfg.Mode == ModeVAD,
		src:        src,
		sink:       sink,
		clk:        clk,
		log:        log,
		frameDur:   time.Duration(cfg.FrameMS) * time.Millisecond,
		frames:     reg.Counter(MetricFrames, "Mic frames handed to the uplink (including dropped ones)."),
		dropped:    reg.Counter(MetricDropped, "Mic frames the uplink dropped."),
		utterances: reg.Counter(MetricUtterances, "Mic utterances started."),
		readErrors: reg.Counter(MetricReadErrors, "Mic read failures (each ends a Run)."),
		bgFrames:   reg.Counter(MetricBackgroundFrames, "Mic frames the VAD judged with a speech-like background (babble, a television): speech had to be louder than it."),
		bgGauge:    reg.Gauge(MetricBackground, "1 while the VAD hears a speech-like background (babble, a television) and asks for a louder voice."),
		transient:  reg.Counter(MetricTransients, "Runs of speech-like mic frames the VAD held back as a decaying transient (a knock, a clap, a servo's clunk) rather than start an utterance on."),
		silent:     reg.Counter(MetricSilentFrames, "Mic frames of digital silence (every sample 0): the mic delivered nothing (a device outage, padded with silence) or is muted."),
	}
	ringLen := 1
	if p.vad {
		v := cfg.VAD
		p.preFrames = cfg.frames(v.PreRollMS)
		p.lostFrames = cfg.frames(lostAfterMS)
		p.minSpeechFrames = max(cfg.frames(v.MinSpeechMS), 1)
		p.hangFrames = max(cfg.frames(v.HangoverMS), 1)
		p.maxFrames = max(v.MaxUtteranceMS/cfg.FrameMS, 1)
		p.floor = vad.NewFloor(v.FloorRiseDBPerS, cfg.FrameMS)
		ringLen = p.preFrames + p.minSpeechFrames
		if decay := vad.TransientDecay(v.TransientDecayDB); decay > 0 {
			g, err := vad.NewTransientGuard(vad.TransientConfig{FrameMS: cfg.FrameMS, DecayDB: decay})
			if err != nil {
				return nil, fmt.Errorf("capture: vad.transient_decay_db: %w", err)
			}
			p.trans = g
			p.gradualFrames = p.minSpeechFrames
			if v.GradualStartMS > 0 { // negative: off
				p.gradualFrames = min(max(cfg.frames(v.GradualStartMS), 1), p.minSpeechFrames)
			}
			p.retroFrames = cfg.frames(transientRetroMS)
			p.maxRetro = p.retroFrames + cfg.frames(transientRetroHeldMS)
			ringLen += p.maxRetro
		}
		if v.Detector != vad.KindEnergy {
			kind, mode, fast := v.Detector, v.DetectorMode, v.FastOnset
			if kind == DetectorAuto {
				// auto is the measured default: spectral with its
				// (provisional) onset step, no other options.
				kind, mode, fast, p.auto = vad.KindSpectral, 0, true, true
			}
			d, err := vad.New(vad.Options{Kind: kind, FrameMS: cfg.FrameMS, Mode: mode, BackgroundDB: v.BackgroundDB, FastOnset: fast,
				Energy: vad.EnergyConfig{MinFloorDBFS: v.MinFloorDBFS}})
			if err != nil {
				return nil, fmt.Errorf("capture: vad.detector %q: %w", v.Detector, err)
			}
			p.det = d
			p.detAdapt, _ = d.(vad.Adapter)
			p.detBG, _ = d.(vad.BackgroundGuarded)
			if fast {
				p.detProv, _ = d.(vad.Provisional)
			}
			if p.detProv != nil {
				ringLen += cfg.frames(provisionalMS) // only a detector that can be provisional makes a run wait
			}
		}
	}
	p.lostSrc, _ = hw.FindSource[LostReporter](src)
	if g, ok := src.(OnsetGuard); ok {
		p.SetOnsetGuard(g)
	}
	frameLen := hw.MicFormat.SampleRate * cfg.FrameMS / 1000
	backing := make([]int16, ringLen*frameLen)
	p.ring = make([]slot, ringLen)
	for i := range p.ring {
		p.ring[i].samples = backing[i*frameLen : (i+1)*frameLen : (i+1)*frameLen]
	}
	return p, nil
}

// SetOnsetGuard installs g (nil removes it); NewPump installs the source
// itself when it implements OnsetGuard. Call before Run.
//
// With vad.detector auto a guard switches the pump to the energy detector
// (see DetectorAuto) and removing it back to spectral.
func (p *Pump) SetOnsetGuard(g OnsetGuard) {
	p.guard = g
	p.dsig, _ = g.(DecisionSignal)
	p.echoFree, _ = g.(EchoFree)
	p.osig, _ = g.(OnsetSignal)
	if p.auto {
		p.useEnergy = g != nil
	}
}

// Detector returns the kind of detector the pump uses (auto resolved).
func (p *Pump) Detector() string {
	if p.det == nil || p.useEnergy {
		return vad.KindEnergy
	}
	return p.det.Kind()
}

// Config returns the effective configuration (defaults applied).
func (p *Pump) Config() Config { return p.cfg }

// SetGate installs g (nil removes it). Safe from any goroutine.
func (p *Pump) SetGate(g Gate) {
	if g == nil {
		p.gate.Store(nil)
		return
	}
	p.gate.Store(&gateRef{g})
}

func (p *Pump) gated() bool {
	r := p.gate.Load()
	return r != nil && r.g.Gated()
}

// Run reads frames until ctx is cancelled or the source fails. It returns
// ctx.Err() in the first case and an error wrapping the source's in the
// second (a source closed by its owner gives hw.ErrClosed). An utterance in
// progress is closed with an empty FlagEnd frame either way.
//
// Cancellation is noticed between reads, so within one frame; to abort a
// source stuck in Read, close it.
func (p *Pump) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer p.running.Store(false)
	p.log.Info("capture: started", "mode", p.cfg.Mode, "frame_ms", p.cfg.FrameMS)
	for {
		if err := ctx.Err(); err != nil {
			p.finish()
			p.log.Info("capture: stopped")
			return err
		}
		cur := &p.ring[p.head]
		if err := p.readFrame(cur.samples); err != nil {
			if !errors.Is(err, hw.ErrClosed) {
				p.readErrors.Inc()
			}
			p.finish()
			if cerr := ctx.Err(); cerr != nil {
				p.log.Info("capture: stopped")
				return cerr
			}
			err = fmt.Errorf("capture: reading mic: %w", err)
			p.log.Warn("capture: source failed", "err", err)
			return err
		}
		ts := p.clk.Mono() - p.frameDur
		if ts < p.lastTS {
			ts = p.lastTS
		}
		cur.ts, p.lastTS, p.haveTS = ts, ts, true
		p.process(cur)
	}
}

// readFrame fills dst, tolerating sources that return short reads.
func (p *Pump) readFrame(dst []int16) error {
	for off := 0; off < len(dst); {
		n, err := p.src.Read(dst[off:])
		if err != nil {
			return err
		}
		if n <= 0 {
			return fmt.Errorf("capture: source returned %d samples without an error", n)
		}
		off += n
	}
	return nil
}

// process handles the frame just read into cur. It does not allocate.
func (p *Pump) process(cur *slot) {
	if !p.vad {
		if !p.inUtt {
			p.begin()
		}
		p.send(cur.samples, cur.ts, protocol.FlagContinue)
		return
	}
	p.processVAD(cur)
}

func (p *Pump) processVAD(cur *slot) {
	if p.det != nil && !p.useEnergy {
		p.processDetector(cur)
		return
	}
	dec := p.decision(cur.samples)
	db := pcm.DBFS(dec)
	gated := p.gated()
	lost, partial := p.silence(cur.samples, dec)
	var ref float64
	if !lost {
		ref = max(p.floor.Judge(db), p.cfg.VAD.MinFloorDBFS)
	}

	if p.inUtt || gated || lost {
		p.transientFrame(dec, false)
	}
	if p.inUtt {
		if gated {
			p.send(cur.samples, cur.ts, protocol.FlagEnd)
			p.endUtterance()
			return
		}
		// A frame the echo guard calls echo is no evidence of the user
		// either (uttSpeech).
		p.inUttFrame(cur, p.uttSpeech(!lost && db > ref+p.cfg.VAD.StopDB))
		return
	}

	if gated {
		p.held, p.speechRun = 0, 0
		return
	}
	if lost {
		p.lostFrame()
		return
	}
	echo := p.echoOnly()
	speech := db > ref+p.cfg.VAD.StartDB
	if !speech && !echo && !partial {
		p.backgroundFrame(db)
	}
	bridge := p.runFrame(speech && !echo)
	if echo || partial {
		// The canceller's suppressor may have pushed this frame far below
		// the room's noise: the floor must not follow it down, or the
		// noise coming back when the robot pauses would look like speech.
		// Nor a frame that is partly digital silence (see silence).
		p.floor.Hold()
	} else {
		p.floor.Follow(db)
	}
	if bridge {
		p.holdFrame()
		return
	}
	p.idleFrame(cur, p.transientFrame(dec, p.speechRun > 0 || speech && echo))
}

// processDetector is processVAD with an external detector's decision.
func (p *Pump) processDetector(cur *slot) {
	gated := p.gated()
	dec := p.decision(cur.samples)
	lost, partial := p.silence(cur.samples, dec)
	if p.inUtt || gated || lost {
		p.transientFrame(dec, false)
	}
	if p.inUtt {
		if gated {
			p.send(cur.samples, cur.ts, protocol.FlagEnd)
			p.endUtterance()
			return
		}
		if lost {
			p.inUttFrame(cur, false)
			return
		}
		if p.detAdapt != nil && p.echoFree != nil {
			p.detAdapt.SetAdapt(p.echoFree.EchoFree() && !partial)
		}
		speech := p.det.Speech(dec, true)
		p.noteBackground()
		p.inUttFrame(cur, p.uttSpeech(speech))
		return
	}
	if lost {
		p.lostFrame()
		return
	}
	echo := p.echoOnly()
	if p.detAdapt != nil {
		// As the energy floor: neither frames the canceller's suppressor
		// pushed below the room noise nor the robot's own voice heard
		// through the half-duplex gate may become the noise estimate.
		// With a canceller that knows when no echo can be in the mic
		// (EchoFree), only those frames, in an utterance too: while the
		// robot speaks the suppressor holds the room noise down with the
		// echo (between the user's words as well), and a noise estimate
		// learnt there took the room's own level for speech when the
		// reply ended (docs/benchmarks.md "The first hops of a word").
		p.detAdapt.SetAdapt(!echo && !gated && !partial && (p.echoFree == nil || p.echoFree.EchoFree()))
	}
	speech := p.det.Speech(dec, false)
	p.noteBackground()
	if gated {
		p.held, p.speechRun = 0, 0
		return
	}
	if !speech && !echo && !partial {
		p.backgroundFrame(pcm.DBFS(dec))
	}
	if p.runFrame(speech && !echo) {
		p.holdFrame()
		return
	}
	p.idleFrame(cur, p.transientFrame(dec, p.speechRun > 0 || speech && echo))
}

// runFrame updates the run of speech frames outside an utterance with the
// frame just judged (speech: the VAD called it speech and the onset guard
// did not call it echo). It reports whether the frame is bridged: not
// speech, yet the run goes on past it (the frame is held as the run's
// pre-roll, counted neither as speech nor as its end, and not shown to the
// transient guard).
//
// A run bridges one such frame, and only when its last speech frame was
// one the echo canceller let through while the far end played
// (OnsetSignal's use flag: the canceller reduced it by little, so it holds
// a sound that is not the robot's echo). Why: in double talk the
// canceller's suppressor lets the user's first syllable through in
// pieces, holding one 20 ms frame of it down (or the guard judges that
// one frame echo), and the run of speech frames restarted at every such
// frame: measured in full duplex at SER −10 dB, a soft "Wait, …" came out
// as runs of 1, 2 and 1 frames and went unheard until the next word,
// 600 ms later. The residual echo bursts that runs of a few frames can
// also be are ones the canceller reduced by 30 dB and more, and bridge
// nothing (docs/audio.md "One frame held down in double talk").
func (p *Pump) runFrame(speech bool) (bridged bool) {
	if speech {
		if p.speechRun == 0 {
			p.bridged = false
		}
		p.speechRun++
		p.runRoom = false
		if p.osig != nil {
			_, p.runRoom = p.osig.OnsetFrame()
		}
		return false
	}
	if p.speechRun > 0 && p.runRoom && !p.bridged {
		p.bridged = true
		return true
	}
	p.speechRun, p.bridged, p.runRoom = 0, false, false
	return false
}

// holdFrame keeps the frame just read, outside an utterance, as pre-roll.
func (p *Pump) holdFrame() {
	p.head = (p.head + 1) % len(p.ring)
	p.held = min(p.held+1, len(p.ring)-1)
}

// noteBackground counts and reports the detector's speech-like background
// guard after a frame (Run goroutine).
func (p *Pump) noteBackground() {
	if p.detBG == nil {
		return
	}
	on := p.detBG.BackgroundGuardOn()
	if on {
		p.bgFrames.Inc()
	}
	if on == p.bgOn {
		return
	}
	p.bgOn = on
	if on {
		p.bgGauge.Set(1)
		p.log.Info("capture: speech-like background (babble, a television): speech must be louder than it", "background_db", vad.BackgroundMargin(p.cfg.VAD.BackgroundDB))
	} else {
		p.bgGauge.Set(0)
		p.log.Info("capture: speech-like background gone")
	}
}

// lostAfterMS is how much of the room's background the VAD must have heard
// before it holds its noise estimate through digital silence (Pump.silence).
const lostAfterMS = 1000

// provisionalMS: how long a run of speech can wait for its detector to
// confirm a provisional onset (vad.Provisional; the spectral detector's
// onset step confirms or revokes within 60 ms of firing); the pre-roll
// ring is this much longer, so a start that waited still sends the whole
// pre-roll.
const provisionalMS = 80

// silence reports whether the frame just read (samples, and dec, what the
// VAD judges) is digital silence the VAD must not learn from (lost), or
// holds some (partial). Both only once the VAD knows the room: it has
// heard lostFrames of its background, the last of them above
// lostRoomDBFS.
//
// lost: every sample 0. A real mic never delivers a frame of exact zeros
// (its own noise, the room's); a mic that delivered nothing does:
// hw/portaudio's Source pads a device outage with silence (seconds while
// a USB mic is reopened), and aec.Source passes such a read on as
// silence. Learnt from, that silence pulled the noise estimate (the
// energy floor, the spectral detector's) down to nothing, and the room's
// noise coming back started an utterance: in full duplex a false
// barge-in at every outage. So such a frame is neither speech nor the
// background: the detector does not see it, the floor and the noise
// estimate stay where the room had them, outside an utterance it ends any
// run of speech frames (and is pre-roll, as silence), and an utterance it
// falls in runs out its hangover.
//
// partial: a run of at least partialZeros zero samples, not the whole
// frame: an outage begins or ends in it (a real mic's noise does not stay
// at exactly 0 for that long). It is judged as any frame but not learnt
// from (the energy floor followed the gap's part down by 10 dB and more,
// and the room's next frame was speech).
//
// Before the VAD knows the room, and in a room as quiet as digital
// silence (a simulation without noise, a clean recording: digital silence
// between its phrases), exact zeros are the room, the background as
// before, unless the source reports them as its stand-in for audio it
// did not capture (LostReporter: a mic that opens late, a lost one in a
// silent room): then the frame is lost from the first read on, whatever
// it holds. Frames of digital silence and lost frames are counted
// (MetricSilentFrames).
func (p *Pump) silence(samples, dec []int16) (lost, partial bool) {
	if p.lostSrc != nil && p.lostSrc.Lost() {
		// The source says so: an outage from the first read on.
		p.silent.Inc()
		return true, false
	}
	known := p.background >= p.lostFrames && p.roomAudible
	switch run := pcm.ZeroRun(samples); {
	case run == len(samples) && pcm.ZeroRun(dec) == len(dec):
		p.silent.Inc()
		return known, false
	case run >= partialZeros:
		return false, known
	}
	return false, false
}

// backgroundFrame counts a frame of level db judged the room's background
// (silence).
func (p *Pump) backgroundFrame(db float64) {
	p.background = min(p.background+1, p.lostFrames)
	p.roomAudible = db > lostRoomDBFS
}

// lostRoomDBFS: a room whose background is at or under this level (a
// simulation without noise: digital silence wherever no sound is) is not
// told from an outage, and its digital silence is its background.
const lostRoomDBFS = -90.0

// lostFrame handles a lost frame (silence) outside an utterance: it ends
// any run of speech frames and is kept as pre-roll (silence; an onset
// just after it sends it as it would any frame before the voice).
func (p *Pump) lostFrame() {
	p.speechRun = 0
	p.holdFrame()
}

// partialZeros: a run of this many zero samples (4 ms) in a frame is a
// mic outage's edge (Pump.silence); aec.Source takes the same run for an
// outage.
const partialZeros = 64

// decision is what the VAD judges for the frame read into s: the guard's
// DecisionFrame when it has one of that length, else s itself.
func (p *Pump) decision(s []int16) []int16 {
	if p.dsig != nil {
		if d := p.dsig.DecisionFrame(); len(d) == len(s) {
			return d
		}
	}
	return s
}

func (p *Pump) echoOnly() bool { return p.guard != nil && p.guard.EchoDominated() }

// uttSpeech is whether a frame in an utterance counts as speech for its
// end: the VAD called it speech (vadSpeech) and the echo guard did not
// call it echo. The hangover counts the rest: an utterance ends
// HangoverMS after the user's last frame even while the robot's voice
// goes on. Before, a frame in an utterance was judged by the VAD alone,
// and where the canceller leaves the echo loud (a 1.5 s hall: its output
// 15 dB under the mic) the first barge-in's utterance ran on over the
// robot's voice to the end of the session: every later user went unheard
// (duplex-bench --rt60 1.5 --drr-db -3 --barge-in --ser-db 0, 30
// replies: 5 barge-ins within 300 ms, 26 of 30 phrases clipped), and the
// uplink carried the robot's residual as the user's speech
// (docs/benchmarks.md).
func (p *Pump) uttSpeech(vadSpeech bool) bool { return vadSpeech && !p.echoOnly() }

// inUttFrame handles a frame inside an utterance.
func (p *Pump) inUttFrame(cur *slot, speech bool) {
	if speech {
		p.silentRun = 0
	} else {
		p.silentRun++
	}
	p.uttFrames++
	if p.silentRun >= p.hangFrames || p.uttFrames >= p.maxFrames {
		p.send(cur.samples, cur.ts, protocol.FlagEnd)
		p.endUtterance()
		return
	}
	p.send(cur.samples, cur.ts, protocol.FlagContinue)
}

// idleFrame handles a frame outside an utterance once speechRun is updated;
// transient says the transient guard holds the run of speech frames.
func (p *Pump) idleFrame(cur *slot, transient bool) {
	if transient || p.speechRun < p.needFrames() || p.provisional() {
		p.holdFrame()
		return
	}
	// Onset: send the pre-roll and the speech frames so far, oldest first.
	// (Only a config whose max utterance is about pre-roll + min speech
	// makes these frames already too many; the last then ends it.)
	p.begin()
	k := min(p.held+1, p.preFrames+p.speechRun+p.retro)
	if p.bridged {
		k = min(k+1, p.held+1) // the bridged frame is inside the run
	}
	end := k >= p.maxFrames
	for i := k - 1; i >= 0; i-- {
		s := &p.ring[(p.head-i+len(p.ring))%len(p.ring)]
		flag := protocol.FlagContinue
		if i == 0 && end {
			flag = protocol.FlagEnd
		}
		p.send(s.samples, s.ts, flag)
	}
	p.head = (p.head + 1) % len(p.ring)
	if end {
		p.endUtterance()
		return
	}
	p.uttFrames = k
	p.held = 0
}

// provisional reports whether the detector's last speech call rests on an
// onset it has not confirmed yet (vad.Provisional): a run waits for it
// before it starts an utterance, its frames kept as pre-roll (the ring
// holds provisionalMS more for them). The spectral detector's onset step
// confirms or revokes within 60 ms of firing, and a revoked run ends
// there: a room whose noise rises by a few dB at once starts no
// utterance on the step alone (docs/benchmarks.md "A provisional onset
// step").
func (p *Pump) provisional() bool {
	return p.detProv != nil && !p.useEnergy && p.detProv.Provisional()
}

// needFrames is how many speech frames in a row start an utterance: min
// speech, or fewer once the transient guard has found the run's onset
// gradual (a voice rising; a knock's is abrupt and keeps the full min
// speech, in which the guard judges its decay).
// With an echo canceller's onset guard only while no echo is heard (the
// residual of the robot's own voice also rises gradually).
func (p *Pump) needFrames() int {
	if p.trans == nil || !p.trans.GradualOnset() {
		return p.minSpeechFrames
	}
	if p.guard != nil && (p.echoFree == nil || !p.echoFree.EchoFree()) {
		return p.minSpeechFrames
	}
	return p.gradualFrames
}

// transientRetroMS: a run of speech frames that starts within this long
// after a run the transient guard held (one that would otherwise have
// started an utterance) has that run and the gap in its pre-roll, up to
// transientRetroHeldMS of the held run. The guard can take a voice's first
// syllable for a knock — a short vowel closed by a stop, as in "Ex-cuse
// me", starts abruptly and falls like one — and the next syllable then
// starts the utterance: this way the first is still sent (a knock just
// before a voice is sent too, which costs nothing).
const (
	transientRetroMS     = 300
	transientRetroHeldMS = 400
)

// transientFrame feeds the transient guard the frame the VAD judged; run
// says it extends a run of speech frames outside an utterance (any other
// frame only updates the guard's history and ends the run). The guard's
// run includes the frames the VAD called speech but the onset guard
// called echo: those do not count toward min speech, but a knock whose
// first frames an echo canceller's guards held is still judged from its
// abrupt start, and its decaying tail, which those guards let through,
// is held as a knock's (measured in full duplex, knocks during the
// robot's replies: 13 false barge-ins in 600 replies without this, 9
// with it; docs/benchmarks.md "The room noise's mean, and knocks in
// full duplex"). It reports
// whether the guard holds the run as a decaying transient (a knock, a
// clap), which must not start an utterance.
func (p *Pump) transientFrame(dec []int16, run bool) bool {
	if p.trans == nil {
		return false
	}
	var onset []int16
	use := false
	if p.osig != nil {
		onset, use = p.osig.OnsetFrame()
	}
	if !run {
		if p.transHeld {
			p.heldLen, p.heldAgo = p.transRun, 0
		} else if p.heldLen > 0 {
			if p.heldAgo++; p.heldAgo > p.retroFrames {
				p.heldLen = 0
			}
		}
		p.transHeld, p.transRun = false, 0
		p.trans.FrameOnset(dec, onset, use, false)
		return false
	}
	if p.transRun == 0 {
		p.retro = 0
		if p.heldLen > 0 {
			p.retro = min(p.heldAgo+p.heldLen, p.maxRetro)
			p.heldLen = 0
		}
	}
	p.transRun++
	hold := p.trans.FrameOnset(dec, onset, use, true)
	if hold && !p.transHeld && p.speechRun >= p.minSpeechFrames {
		// Counted once per run, and only when it kept an utterance from
		// starting.
		p.transHeld = true
		p.transient.Inc()
	}
	return hold
}

// begin starts an utterance; its first delivered frame gets FlagStart.
func (p *Pump) begin() {
	p.utt++
	p.utterances.Inc()
	p.inUtt, p.startPending = true, true
	p.silentRun, p.uttFrames = 0, 0
}

func (p *Pump) endUtterance() {
	p.inUtt, p.startPending = false, false
	p.held, p.speechRun, p.silentRun, p.uttFrames = 0, 0, 0, 0
}

// send hands one frame to the sink; FlagContinue becomes FlagStart while the
// utterance has no delivered frame yet.
func (p *Pump) send(samples []int16, ts time.Duration, flag protocol.Flag) {
	if p.startPending && flag == protocol.FlagContinue {
		flag = protocol.FlagStart
	}
	p.frame = Frame{Utterance: p.utt, Seq: p.seq, Flag: flag, TS: ts, Samples: samples}
	p.seq++
	p.frames.Inc()
	if !p.sink.SendMic(&p.frame) {
		p.dropped.Inc()
		return
	}
	if flag == protocol.FlagStart {
		p.startPending = false
	}
}

// Close releases the detector (cgo detectors hold C memory). Call after Run
// has returned.
func (p *Pump) Close() error {
	if p.det != nil {
		return p.det.Close()
	}
	return nil
}

// finish closes an utterance in progress with an empty FlagEnd frame.
func (p *Pump) finish() {
	if !p.inUtt {
		return
	}
	ts := p.clk.Mono()
	if p.haveTS {
		ts = p.lastTS + p.frameDur
	}
	p.send(nil, ts, protocol.FlagEnd)
	p.endUtterance()
}
