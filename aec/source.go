package aec

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/quantile"
	"github.com/robot-agent/robot-agent/reverb"
)

// SourceConfig tunes the alignment of a Source.
type SourceConfig struct {
	// MaxDelayMS is the longest echo delay the estimator searches beyond
	// the device latencies (default 400).
	MaxDelayMS int
	// MarginMS is how much earlier than the estimated delay the far end is
	// handed to the canceller, so that the echo falls inside its filter
	// even if the delay shrinks a little (default: what the canceller
	// needs, WebRTC 48 ms, speex 8 ms).
	MarginMS int
	// FixedDelayMS > 0 disables the estimator and uses this delay.
	FixedDelayMS int
	// DoubleTalkDB: while the far end plays, a Read whose echo was
	// reduced by more than this (mic energy over output energy) holds only
	// residual echo and no near-end speech, and EchoDominated reports true
	// for it (default DefaultDoubleTalkDB; negative: never).
	DoubleTalkDB float64
	// GuardMarginDB > 0: the double-talk threshold follows the canceller's
	// measured echo reduction while the far end plays (a running median in
	// dB) minus this margin, never below DoubleTalkDB; a read whose echo was
	// reduced less than that holds something the canceller cannot remove
	// (the user). 0 or negative: the fixed DoubleTalkDB threshold. The
	// agent's default is DefaultGuardMarginDB. Measured
	// (docs/benchmarks.md): 10 dB catches 94-98 of 100 barge-ins at SER
	// -10 dB where the fixed threshold catches about half, with speaker
	// and mic on one clock or with DriftCompensation; without
	// compensation, 100 ppm of drift makes the canceller's residual vary
	// too much and it lets the robot interrupt itself. With NoiseGuardDB
	// it is safe in noise too.
	GuardMarginDB float64
	// DriftCompensation: estimate the clock ratio between the speaker and
	// the mic from the echo and read the far end resampled to the mic's
	// clock, so the canceller sees a stationary echo path (see drift.go).
	// Without it the canceller's filter follows the slide on its own.
	DriftCompensation bool
	// NoiseGuardDB: while the far end plays, a read whose cancelled output
	// is less than this many dB above the output's noise floor (a low
	// percentile of the output level, tracked while the far end is silent)
	// counts as echo too: the noise explains it, so it cannot be the
	// user's onset, and the VAD's floor must not follow it (a suppressor
	// pushing the noise down during the echo and releasing it afterwards
	// would otherwise look like speech starting). 0: DefaultNoiseGuardDB;
	// negative: off.
	NoiseGuardDB float64
	// LinearGuardDB > 0, with a dual-path canceller (Options.Uplink
	// linear or linear-gated): the guard also consults the linear filter's
	// output, which the main canceller's residual echo suppressor does not
	// zero. While the far end plays, the running median of the linear
	// filter's own reduction (mic over linear output energy) is tracked
	// like the main canceller's; a read whose linear reduction falls more
	// than this many dB below that median, with the linear output more
	// than NoiseGuardDB above the noise floor, counts as the user even if
	// the main canceller's output is (near) silent, and for that read
	// DecisionFrame is the linear output, so the VAD hears the onset the
	// suppressor hid. The onset, convergence and disturbance guards stay
	// in force. 0 or negative: off (the main canceller's output alone
	// decides).
	LinearGuardDB float64
	// ReverbGuardMS > 0: the reverberation guard, for a room whose late
	// reverberation outlasts the cancellers' filters (ReverbGuardMS: their
	// length, e.g. the linear filter's tail). Package reverb learns the
	// room's decay from the mic in the far end's pauses and predicts, for
	// every read, the energy of the echo beyond that length, which neither
	// filter removes and WebRTC's AEC2 suppressor (no reverberation model)
	// sometimes lets through in a quiet room, and beyond the main
	// canceller's own filter if that is shorter (AEC2's 128 ms). While the
	// far end plays, a read whose decision signal is at most 4 dB above
	// the latter, and whose linear output (dual path) is at most 4 dB
	// above the former, starts no
	// utterance (EchoDominated), unless the linear guard found the user in
	// it (from 200 ms after the far end stopped the linear output may
	// exceed that bound if the linear guard did not find it louder than
	// the filter's usual residual). After the far end's 400 ms hang, while
	// the prediction is above the noise floor, a read whose decision
	// signal is at most 4 dB above it starts none either (the tail of the
	// reply's last words). Until the room is learnt the guard assumes a
	// typical small room (reverb.Typical, its level moved by the echo
	// path's gain as learnt; RestoreRoom replaces it); in a
	// room whose reverberation is under the noise nothing changes. 0: off.
	ReverbGuardMS int
	// ReverbUnassumed: the reverberation guard assumes no room until it
	// has learnt one (it holds nothing until the room's first long pauses,
	// as before 2026-12-07), for measurement (duplex-bench
	// --reverb-typical=false, or a variant's :notyp).
	ReverbUnassumed bool
	// SilentSpeaker: tell from the mic when the speaker plays nothing
	// although its device says it plays (an amplifier without power, a
	// mute switch), and give the canceller silence as the far end
	// meanwhile, as the Tap does while the sink reports its device down
	// (see silentSpeaker).
	SilentSpeaker bool
}

// DefaultSilentSpeaker is the agent's measured default for
// SourceConfig.SilentSpeaker (duplex.silent_speaker; docs/benchmarks.md,
// "A speaker that goes quiet without saying so").
const DefaultSilentSpeaker = true

// DefaultReverbGuard is the agent's measured default for the reverberation
// guard (duplex.reverb_guard; docs/benchmarks.md, "The reverberation
// guard"); SourceConfig's zero value leaves it off.
const DefaultReverbGuard = true

// DefaultLinearGuardDB is the agent's measured default for
// SourceConfig.LinearGuardDB (docs/benchmarks.md, "Linear guard"); the
// zero SourceConfig leaves the guard off.
const DefaultLinearGuardDB = 10.0

// DefaultNoiseGuardDB is the measured default (docs/audio.md): half the
// energy VAD's 12 dB start margin, so a read the VAD would take for speech
// over the noise is not held back by it (3 dB measured the same).
const DefaultNoiseGuardDB = 6.0

// DefaultDriftCompensation is the measured default (docs/audio.md).
const DefaultDriftCompensation = true

// DefaultGuardMarginDB is the measured default margin of the agent's
// duplex.guard_margin_db (docs/audio.md); SourceConfig's zero value is the
// fixed threshold.
const DefaultGuardMarginDB = 10.0

// defaultMarginMS is the far end's lead for cancellers without their own.
const defaultMarginMS = 8

// The estimated delay moves the far end only when the echo would come
// closer to the filter's first tap than the margin minus shrinkTol, or
// later than the margin plus growTol (wasting the filter's tail): every
// move makes the canceller re-adapt (measured: about 2 s of poorer
// cancellation), and clock drift moves the delay steadily. Until the delay
// exceeds margin + growTol the far end is not moved at all.
const (
	shrinkTolMS = 4
	growTolMS   = 40
)

// beyondTolerance reports whether a wanted delay (samples) is far enough
// from the current one to move the far end: shrinkTolMS shorter or
// growTolMS longer.
func beyondTolerance(want, cur int) bool {
	return want < cur-shrinkTolMS*Rate/1000 || want > cur+growTolMS*Rate/1000
}

// onsetRoomDB: a read whose decision frame lies less than this below the
// mic holds a sound the canceller did not take for echo, whose onset is
// judged on the linear output (OnsetFrame). Measured in full duplex
// (WebRTC, echo 0 dB): a user at SER −10 dB 0–13 dB below the mic in the
// first frames of a syllable in a room of RT60 0.3 s; in one of 0.8 s,
// where the suppressor holds the user down further, 25–39 dB in a held
// run's first frame and mostly 19–32 dB in the next two; knocks −3..8 dB;
// the bursts a distorting loudspeaker's echo leaves (soft clip, echo
// +5 dB) 35–39 dB, and those keep being judged where they burst, in the
// decision frame; the echo's residual in the first reply, before the
// canceller has settled, 30–34 dB. (24 until the reverberant room was
// measured: docs/benchmarks.md "Onsets in a reverberant room".)
const onsetRoomDB = 30.0

// DefaultDoubleTalkDB is the measured default (docs/audio.md).
const DefaultDoubleTalkDB = 12.0

// farActive is the far-end level (RMS, samples) above which the speaker
// counts as playing for the double-talk decision (about -60 dBFS).
const farActive = 33.0

// farTail is how long after the far end stops (ms) its echo and the
// suppressor's release still count as echo for EchoDominated.
const farTail = 400

// convergedReads: until the canceller has removed more than DoubleTalkDB
// on this many reads, every read while the far end plays counts as echo
// (half duplex for the first seconds of the first reply; 25 let the
// first reply interrupt itself through the real PulseAudio echo path).
const convergedReads = 100

// onsetGuard (ms) is the stretch after the far end starts in which a mic
// level explained by the learned echo path counts as echo.
const onsetGuard = 300

// linearTrustDB: for the start of an utterance (EchoDominated), a read
// counts as echo when the canceller removed more than the linear filter
// typically does plus this much, even where the adaptive double-talk
// threshold (the canceller's median reduction less GuardMarginDB) asks
// for more. That median is the suppressor's: in a quiet room mostly
// digital silence, 50–60 dB. Where the echo is one the linear filter
// cannot model (a loudspeaker that distorts: it removes only 13–22 dB),
// the suppressor swings between that silence and 25–40 dB, and each
// partly suppressed read, well under the median less the margin, looked
// like the user: with tanh(4x)/4 soft clipping in a silent room, 28 false
// barge-ins in 30 replies, most 300–450 ms into a reply. A user over the
// echo is reduced by far less (at SER −10 dB, about 10 dB plus what the
// suppressor takes of the voice), and the linear guard's evidence of the
// user still counts.
// The uplink's choices (the decision frame, the gate) keep the adaptive
// threshold, so the user's voice in double talk is unchanged. Measured
// with 12, 15 and 18 dB (docs/benchmarks.md "A loudspeaker that
// distorts"): 15 held the false starts of those rooms but one in 500
// replies and cost 4 of 100 barge-ins in a 0.8 s room, where the linear
// filter, shorter than the tail, removes 25 dB.
const linearTrustDB = 15

// disturbGuard (ms) is how long at most after a disturbance of the
// alignment (the speaker's or the mic's timeline re-anchored: a device
// underflow or a stalled writer on a loaded machine) the learned-echo-path
// check of the onset guard applies, because the canceller's filter may no
// longer line up with the echo until it re-adapts; shiftGuard (ms) the same
// after the far end was moved (the canceller is reset and converges again,
// about 2 s). The guard lapses earlier once the canceller has removed more
// than the double-talk threshold on recoveredMS of reads with the far end
// playing in a row (it lines up again). Measured through the real
// PulseAudio echo path at load 3-9: the self-interruptions followed a
// re-anchoring within 0.1-0.6 s (docs/audio.md).
const (
	disturbGuard = 1500
	shiftGuard   = 2000
	recoveredMS  = 200
)

// farPeakHalfLife (ms): the far end's power the disturbance guard compares
// the mic with is its peak over about this long, so a timeline that is off
// by up to a few hundred ms still finds the echo's source.
const farPeakHalfLife = 150

// erlSmoothing: the weight of each echo read in the learned echo path's
// energies (about a second of far-end reads).
const erlSmoothing = 0.02

// Source is an hw.AudioSource that cancels the echo of the Reference in
// what src captures. Read is called by one goroutine (the capture pump).
// Reads should be whole multiples of FrameSamples (10 ms); the remainder
// of any other length passes through uncancelled.
type Source struct {
	src hw.AudioSource
	ref *Reference
	c   Canceller
	clk clock.Clock
	lat hw.LatencyReporter
	cap capturedEnder
	est *DelayEstimator
	cfg SourceConfig

	far, farRaw, out []int16
	farEcho          []int16 // SilentSpeaker: the far end at the estimated delay
	next             int64   // reference index of the next mic sample (integer part)
	frac             float64 // its fractional part (drift compensation)
	ratio            float64 // far-end samples per mic sample (1 without compensation)
	tsOff            float64 // expected disagreement of the mic's timestamps with next (samples)
	anchors          int     // (re-)anchorings of the mic timeline
	driftLocked      bool    // the clock offset has been estimated
	fr               *fracReader
	drift            *driftMeter
	driftPPM         atomic.Uint64 // math.Float64bits of the applied offset
	anchored         bool
	bulk             int // samples of delay taken out before the canceller
	frames           atomic.Int64
	shifts           atomic.Int64
	echoOnly         atomic.Bool
	echoFree         atomic.Bool   // no far end for farTail: no echo in the last Read
	rv               *reverb.Tail  // the reverberation guard's model (ReverbGuardMS), nil: off
	rvMainMS         int           // the main canceller's own filter (filterSpanner), at most ReverbGuardMS
	rvHeld           atomic.Int64  // reads it held
	rvRT60           atomic.Uint64 // the learnt RT60 (float64 bits), for other goroutines
	rvLevel          atomic.Uint64 // and its level (reverb.Model.LevelDB, float64 bits)
	rvReady          atomic.Bool   // the model is learnt (or restored)
	farHang          int           // samples the far end still counts as playing (echo tail, suppressor release)
	farSince         int           // samples since the far end started playing after a pause
	erl              float64       // learned echo path energy gain (mic/far on echo-only reads), 0: unknown
	erle             quantile.Step // median of the canceller's echo reduction (dB) on reads with the far end playing
	linRed           quantile.Step // LinearGuardDB: median of the linear filter's reduction (dB) on the same reads
	linUsed          atomic.Int64
	dt               doubleTalker  // the canceller, if it adapts to double talk
	lin              linearOuter   // the canceller, if its uplink is a linear filter's output (Options.Uplink)
	ls               leadSetter    // the canceller, if it aligns a filter of its own behind the far end
	pauseRed         quantile.Step // the 10th percentile of the linear output's level under erl·farPeak in the reply's pauses (dB)
	dec              []int16       // with lin: the canceller's output of the last Read (DecisionFrame)
	onset            []int16       // with lin: the linear filter's output of the last Read (OnsetFrame)
	onsetUse         bool          // OnsetFrame's use: the far end plays and the read was reduced by less than onsetRoomDB
	decN             int
	gain             float64 // linear-gated: the linear output's share of the uplink at the end of the last read
	hold             int     // linear-gated: samples the linear output still goes up for
	userRun          int     // linear-gated: consecutive reads with the user over the far end
	dtOn             bool
	dtRun, echoRun   int           // consecutive reads with / without the user over the far end
	guardRatio       atomic.Uint64 // math.Float64bits of the current double-talk threshold (linear energy ratio)
	echoReads        int           // reads the canceller has shown to be converged on (up to convergedReads)
	dtRatio          float64       // linear energy ratio of DoubleTalkDB
	noiseDB          float64       // output noise floor (dBFS per sample, low-percentile tracker), while the far end is silent
	haveNoise        bool
	noiseMean        float64 // the output's mean energy per sample in the reads near noiseDB (linearNoise)
	delaySamples     atomic.Int64
	// Disturbances of the alignment (see disturbGuard): the counts last
	// seen, the samples the guard still holds, the far end's decaying
	// peak power (per sample) the learned echo path is applied to.
	seenJumps, seenShifts int64
	seenAnchors           int
	disturbed, recovered  int
	farPeak               float64
	erlMic, erlFar        float64 // smoothed energies the echo path's gain (erl) is their ratio of
	erlHigh               float64 // the guard windows' cautious (high) echo path gain
	guarded               atomic.Int64
	// Mic saturation: samples the saturation hold still covers, and the
	// reads it called echo that the other tests let through.
	satHold        int
	burstHold      int // samples the linear guard still stands down after a near-end burst (linearBurstHoldMS)
	saturatedReads atomic.Int64
	echoClips      atomic.Int64
	refLate        atomic.Int64 // reads held because the reference lacked the speaker's audio (RefLate)
	// Mic outages (lostRead): whether the last Read was one of an
	// outage's; how many ended, and how many of those the disturbance
	// guard has seen; the reads lost.
	lost                   bool
	dropouts, seenDropouts int
	lostReads              atomic.Int64
	srcLost                lostReporter // src's, if it has one
	// A speaker that plays nothing although its device says it plays
	// (SilentSpeaker): the detector, whether it found the speaker back
	// (for the disturbance guard), the reads it held, its episodes.
	sil        silentSpeaker
	silentBack bool
	silentHeld atomic.Int64
	silents    atomic.Int64
}

// capturedEnder is an optional capability of a source: the clock.Mono time
// at which the sample after the last one Read returned was captured. A
// source that returns at once to a late caller has it exactly, where
// "return time − DeviceLatency" is off by how late the caller was: the mic
// then looks later than it is, the reference read for it is ahead of the
// echo in it, and the robot's voice passes as the user's.
type capturedEnder interface {
	CapturedEnd() time.Duration
}

// NewSource wraps src (16 kHz mono) with canceller c using ref.
func NewSource(src hw.AudioSource, ref *Reference, c Canceller, clk clock.Clock, cfg SourceConfig) *Source {
	if cfg.MaxDelayMS == 0 {
		cfg.MaxDelayMS = 400
	}
	if cfg.MarginMS == 0 {
		cfg.MarginMS = defaultMarginMS
		if l, ok := c.(leader); ok {
			cfg.MarginMS = l.LeadMS()
		}
	}
	if cfg.DoubleTalkDB == 0 {
		cfg.DoubleTalkDB = DefaultDoubleTalkDB
	}
	if cfg.NoiseGuardDB == 0 {
		cfg.NoiseGuardDB = DefaultNoiseGuardDB
	}
	s := &Source{src: src, ref: ref, c: c, clk: clk, cfg: cfg,
		far: make([]int16, FrameSamples), farRaw: make([]int16, FrameSamples), farEcho: make([]int16, FrameSamples), out: make([]int16, FrameSamples)}
	s.lat, _ = hw.FindSource[hw.LatencyReporter](src)
	s.cap, _ = hw.FindSource[capturedEnder](src)
	s.srcLost, _ = hw.FindSource[lostReporter](src)
	s.dtRatio = math.Pow(10, cfg.DoubleTalkDB/10)
	s.dt, _ = c.(doubleTalker)
	if l, ok := c.(linearOuter); ok && l.Linear() != nil {
		s.lin = l
	}
	s.erle, s.linRed = quantile.New(0.5, medianStepDB), quantile.NewStarted(0.5, medianStepDB, linearStartReads)
	s.pauseRed = quantile.New(pauseQuantile, quantileStepDB)
	s.ratio = 1
	if cfg.DriftCompensation {
		s.fr, s.drift = newFracReader(), newDriftMeter()
	}
	s.ls, _ = c.(leadSetter)
	if cfg.ReverbGuardMS > 0 {
		s.rv = reverb.New(cfg.ReverbGuardMS)
		s.rvMainMS = cfg.ReverbGuardMS
		if f, ok := c.(filterSpanner); ok && f.FilterMS() > 0 {
			s.rvMainMS = min(s.rvMainMS, f.FilterMS())
		}
		if !cfg.ReverbUnassumed {
			_ = s.rv.Assume(reverb.Typical()) // within reverb's limits (its tests)
		}
	}
	if cfg.FixedDelayMS > 0 {
		s.bulk = max(0, (cfg.FixedDelayMS-cfg.MarginMS)*Rate/1000)
		if s.ls != nil {
			s.ls.SetLead(cfg.FixedDelayMS*Rate/1000 - s.bulk)
		}
	} else {
		s.est = NewDelayEstimator(cfg.MaxDelayMS)
	}
	return s
}

// Format implements hw.AudioSource.
func (s *Source) Format() hw.AudioFormat { return s.src.Format() }

// Close implements hw.AudioSource (closes src, not the canceller).
func (s *Source) Close() error { return s.src.Close() }

// Unwrap returns the wrapped source.
func (s *Source) Unwrap() hw.AudioSource { return s.src }

// Kind returns the canceller's kind.
func (s *Source) Kind() string { return s.c.Kind() }

// DeviceLatency implements hw.LatencyReporter by forwarding.
func (s *Source) DeviceLatency() time.Duration {
	if s.lat == nil {
		return 0
	}
	return s.lat.DeviceLatency()
}

// EstimatedDelay is the echo delay beyond the device latencies found by the
// estimator (or the fixed one). Any goroutine.
func (s *Source) EstimatedDelay() time.Duration {
	return time.Duration(s.delaySamples.Load()) * time.Second / Rate
}

// delayHint is the echo delay (samples) behind the far end at s.next, from
// the estimator or the fixed delay.
func (s *Source) delayHint() (int, bool) {
	if s.est != nil {
		return s.est.Delay()
	}
	return s.bulk + s.cfg.MarginMS*Rate/1000, true
}

// DriftPPM is the clock offset the far end is compensated for: how much
// faster the mic's clock runs than the speaker's, in ppm (0 until
// estimated, or without DriftCompensation). Any goroutine.
func (s *Source) DriftPPM() float64 { return -math.Float64frombits(s.driftPPM.Load()) }

// Shifts counts changes of the delay taken out before the canceller, and
// of a dual-path canceller's linear filter alignment (each makes the
// canceller re-adapt). Any goroutine.
func (s *Source) Shifts() int64 { return s.shifts.Load() }

// Read implements hw.AudioSource.
func (s *Source) Read(dst []int16) (int, error) {
	n, err := s.src.Read(dst)
	if err != nil || n <= 0 {
		return n, err
	}
	var t time.Duration
	if s.cap != nil {
		t = s.cap.CapturedEnd() - time.Duration(n)*time.Second/Rate
	} else {
		t = s.clk.Mono() - time.Duration(n)*time.Second/Rate
		if s.lat != nil {
			t -= s.lat.DeviceLatency()
		}
	}
	idx := s.ref.index(t)
	// The mic's timestamps re-anchor its timeline when they disagree with
	// the sample count by more than reanchor (a reopened device, lost
	// samples). With drift compensation the count advances at the
	// estimated clock ratio and the timestamps (the agent's clock) slide
	// against it slowly by the clock offset: the expected disagreement
	// follows them (tsOff, about 5 s), so only a sudden jump re-anchors.
	d := float64(idx-s.next) - s.tsOff
	if !s.anchored || math.Abs(d) > float64(reanchor*Rate/time.Second) {
		s.next, s.frac, s.tsOff, s.anchored = idx, 0, 0, true
		s.anchors++
		if s.drift != nil {
			s.drift.discontinuity()
		}
	} else if s.drift != nil {
		s.tsOff += d / 256
	}
	if s.lin != nil {
		if cap(s.dec) < n {
			s.dec = make([]int16, n) // once, for the largest read
			s.onset = make([]int16, n)
		}
		s.decN = n
		copy(s.dec[n/FrameSamples*FrameSamples:n], dst[n/FrameSamples*FrameSamples:n]) // an uncancelled remainder
		copy(s.onset[n/FrameSamples*FrameSamples:n], dst[n/FrameSamples*FrameSamples:n])
	}
	wasLost := s.lost
	s.lost = false
	if n >= FrameSamples && (s.srcLost != nil && s.srcLost.Lost() || s.haveNoise && s.noiseDB > outageRoomDB && digitalSilence(dst[:n])) {
		clear(dst[:n])
		s.lostRead(n)
		return n, nil
	}
	if wasLost {
		// The mic is back: the canceller's far-end history is from
		// before the outage, so it lets the echo through for a moment,
		// and the path may have moved (a reopened device): the
		// disturbance guard holds what the learned echo path explains
		// until the canceller shows its reduction again (without it, 10–17
		// false barge-ins in 40 replies with a 2 s outage every 7 s, 3
		// seeds; with it none).
		s.dropouts++
	}
	var eMic, eOut, eFar, eLin, eLate, eLateMain float64
	// The noise floor the reverberation guard learns the room's decay
	// above (energy per frame): the output's, which is the mic's while the
	// far end is silent; it moves only after this read's frames.
	rvNoise := 0.0
	if s.rv != nil && s.haveNoise {
		rvNoise = s.noiseEnergy(FrameSamples)
	}
	// While the speaker is taken for silent (SilentSpeaker) the far end
	// is silence to the canceller and everything that learns from it.
	fed := !s.cfg.SilentSpeaker || s.sil.feedFar()
	var eFarEcho float64 // the far end the mic's echo is of (the estimated delay before it), fed or not
	clippedEnd := -1     // end of the last mic frame of this read that clipped
	clipped := 0         // mic frames of this read that clipped
	refLate := false     // the reference lacked audio the speaker was handed (Reference.behind)
	for off := 0; off+FrameSamples <= n; off += FrameSamples {
		near := dst[off : off+FrameSamples]
		if s.est != nil && fed {
			s.ref.readAt(s.farRaw, s.next)
			s.est.Push(s.farRaw, near)
			if d, ok := s.est.Delay(); ok {
				s.delaySamples.Store(int64(d))
				want := max(0, d-s.cfg.MarginMS*Rate/1000)
				if beyondTolerance(want, s.bulk) {
					s.bulk = want
					s.shifts.Add(1)
					s.c.Reset()
					if s.drift != nil {
						s.drift.discontinuity()
					}
				}
				// An echo sooner than the margin leaves the far end less
				// lead than the canceller asked for (bulk is 0): a filter
				// the canceller aligns itself follows.
				if s.ls != nil && s.ls.SetLead(d-s.bulk) {
					s.shifts.Add(1)
				}
			}
		} else {
			s.delaySamples.Store(int64(s.bulk + s.cfg.MarginMS*Rate/1000))
		}
		if s.ref.behind(s.next-int64(s.bulk)+FrameSamples+1, t+time.Duration(off)*time.Second/Rate, FrameSamples*time.Second/Rate) {
			refLate = true
		}
		if s.fr != nil {
			s.fr.read(s.ref, s.far, s.next-int64(s.bulk), s.frac, s.ratio)
			hint := -1
			if d, ok := s.delayHint(); ok {
				hint = d - s.bulk
			}
			if fed {
				s.drift.push(s.far, near, float64(s.next-int64(s.bulk))+s.frac, s.ratio, hint)
			}
		} else {
			s.ref.readAt(s.far, s.next-int64(s.bulk))
		}
		if s.cfg.SilentSpeaker {
			// The canceller's far end leads the echo by its margin; the
			// silent-speaker detector compares the mic with what it
			// holds the echo of.
			s.ref.readAt(s.farEcho, s.next-s.delaySamples.Load())
			eFarEcho += energy(s.farEcho)
		}
		if !fed {
			clear(s.far)
		}
		if saturated(near) {
			clippedEnd = off + FrameSamples
			clipped++
		}
		eN, eF := energy(near), energy(s.far)
		eMic += eN
		eFar += eF
		if s.rv != nil {
			// The model's late reverberation, or in a free decay of the
			// room beyond the filters the decay's own line if higher.
			late := s.rv.Push(eF, eN, rvNoise)
			fd := s.rv.FreeDecay()
			eLate += max(late, fd)
			// And beyond the main canceller's own filter: what it leaves.
			eLateMain += max(s.rv.Beyond(s.rvMainMS), fd)
		}
		s.c.Process(s.out, near, s.far)
		eOut += energy(s.out)
		if s.lin != nil {
			// Dual path: the linear filter's output goes up, the
			// canceller's decides.
			copy(s.dec[off:], s.out)
			lo := s.lin.Linear()
			eLin += energy(lo)
			copy(s.onset[off:], lo)
			copy(near, lo)
		} else {
			copy(near, s.out)
		}
		if s.drift != nil {
			if r, ok := s.drift.fit.Ratio(); ok {
				if !s.driftLocked {
					// The clock offset is found: the reduction measured so
					// far is the drifting path's, mostly while the
					// canceller converged (first reply), and on the
					// compensated path it may not give it yet (measured at
					// +200 ppm: 25-33 dB against a 43 dB threshold, a false
					// barge-in in the first reply of every start). The
					// adaptive threshold restarts from the fixed one and
					// rises (at most 10 dB/s) as the canceller shows its
					// reduction.
					s.erle.Cap(s.cfg.DoubleTalkDB + s.cfg.GuardMarginDB)
				}
				s.ratio, s.driftLocked = r, true
				s.driftPPM.Store(math.Float64bits((r - 1) * 1e6))
			}
		}
		s.advance()
	}
	silHold := s.silentSpeaker(n, eMic, eFarEcho)
	s.farPlays(n, eFar)
	// The double-talk threshold: DoubleTalkDB, or the canceller's typical
	// echo reduction while the far end plays minus GuardMarginDB when that
	// is higher (a canceller that removes 35 dB of echo leaves a user 10 dB
	// below the echo, even partly suppressed, well short of that). Typical
	// is the running median of the per-read reduction over every read with
	// the far end playing: the user's speech, a minority of them, moves a
	// median little (and downwards: more guarding, not less), and a
	// suppressor's digital silence does not drag it up as it would a mean.
	farNow := eFar > farActive*farActive*float64(n)
	if farNow && s.echoReads >= convergedReads {
		s.erle.Push(reductionDB(eMic, eOut))
	}
	thr := s.dtRatio
	// With drift compensation the adaptive threshold waits for the clock
	// offset to be found: before that (or if it is never found) the
	// canceller's residual may be the unsteady one of a drifting path,
	// for which the fixed threshold is the safe one.
	if s.cfg.GuardMarginDB > 0 && s.erle.Ready() && (s.drift == nil || s.driftLocked) {
		thr = max(thr, math.Pow(10, (s.erle.Value()-s.cfg.GuardMarginDB)/10))
	}
	s.guardRatio.Store(math.Float64bits(thr))
	echo := s.farHang > 0 && eMic > thr*eOut
	// For starting an utterance (EchoDominated) the threshold is also
	// capped at the linear filter's typical reduction plus linearTrustDB:
	// see linearTrustDB. The uplink's choices (the decision frame, the
	// gate) keep echo.
	startEcho := echo
	if s.lin != nil && thr > s.dtRatio && s.linearReady() {
		c := max(s.dtRatio, math.Pow(10, (s.linRed.Value()+linearTrustDB)/10))
		startEcho = s.farHang > 0 && eMic > min(thr, c)*eOut
	}
	eDec := eOut          // the decision frame's energy (whole frames), the linear output's where it takes that
	eDecLate := eLateMain // the late reverberation beyond the filter eDec comes from
	disturbed := s.disturbance(n, eFar, farNow, echo)
	linUser, linAudible := s.linearUser(n, eFar, farNow, echo, eMic, eLin)
	// The output's noise floor, tracked while the far end is silent (what
	// the VAD hears between the robot's replies): a 10th-percentile
	// tracker in dB, down 0.18 dB and up 0.02 dB per read (9 and 1 dB/s
	// on 20 ms reads), so the user's speech between replies barely lifts it.
	outDB := 10*math.Log10(eOut/float64(n)+1e-3) - fullScaleDB
	if s.farHang == 0 {
		trackFloor(&s.noiseDB, &s.haveNoise, outDB, n)
		if outDB < s.noiseDB+noiseMeanGateDB {
			// The noise's mean energy, from the reads near the floor
			// (not the user's speech between replies): see linearNoise.
			trackMean(&s.noiseMean, eOut/float64(n), n)
		}
	}
	noiseOnly := s.farHang > 0 && s.cfg.NoiseGuardDB > 0 && s.haveNoise && outDB < s.noiseDB+s.cfg.NoiseGuardDB
	if s.dt != nil {
		s.doubleTalk(farNow && !echo && s.echoReads >= convergedReads, echo)
	}
	if echo && s.echoReads < convergedReads {
		s.echoReads++
	}
	if s.farHang > 0 && s.echoReads < convergedReads {
		// Not converged yet (first reply after start): half duplex.
		echo = true
	}
	if echo && eFar > 0 {
		// The guard windows' cautious echo path (erlHigh): the mean of
		// per-read mic/far ratios over every echo read, the reply's
		// reverberant tail included, where the far end is nearly silent
		// and the ratio 10–40 dB above the true path. Deliberately high:
		// the onset and disturbance guards hold what it explains, and in
		// their windows holding too much is the safe error (judged
		// against the true path instead, the PulseAudio test's robot
		// interrupted itself after a timestamp jump).
		if r := eMic / eFar; s.erlHigh == 0 {
			s.erlHigh = r
		} else {
			s.erlHigh += 0.05 * (r - s.erlHigh)
		}
	}
	if echo && farNow {
		// The canceller removed most of it: mostly echo. Learn the echo
		// path's gain from it, as the ratio of the mic's and the far
		// end's smoothed energies over such reads while the far end
		// plays. (Not the mean of per-read ratios: on a read in the
		// reply's reverberant tail the far end is nearly silent and the
		// ratio 30 dB or more too high; averaged, a few such reads made
		// the learned path swing by 30 dB.)
		if s.erlFar == 0 {
			s.erlMic, s.erlFar = eMic, eFar
		} else {
			s.erlMic += erlSmoothing * (eMic - s.erlMic)
			s.erlFar += erlSmoothing * (eFar - s.erlFar)
		}
		s.erl = s.erlMic / s.erlFar
		if s.rv != nil && s.erl > 0 {
			// An assumed room's level follows the speaker's loudness
			// (reverb.Tail.EchoPath).
			s.rv.EchoPath(10 * math.Log10(s.erl))
		}
	}
	if linUser && s.farHang > 0 && s.echoReads >= convergedReads {
		startEcho = false // the linear guard's evidence of the user counts for starts too
		if echo || noiseOnly {
			// The main canceller's suppressor hid what its linear filter
			// left: the user (LinearGuardDB). The guards below still apply.
			echo, noiseOnly = false, false
			fr := n / FrameSamples * FrameSamples
			copy(s.dec[:fr], dst[:fr])
			eDec, eDecLate = eLin, eLate
			s.linUsed.Add(1)
			linAudible = false // done
		}
	}
	// When the far end starts after a pause the cancellers let the first
	// ~100 ms of echo through; there, a mic level the learned echo path
	// explains (within 6 dB; the cautious path erlHigh) is echo too.
	// Against the far end's recent peak, not this read's level: the room's
	// reverberation of a louder word just before is in the mic too.
	if !echo && s.farHang > 0 && s.farSince <= onsetGuard*Rate/1000 && s.explains(s.erlHigh, eMic, n) {
		echo = true
	}
	if disturbed && !echo && s.farHang > 0 && s.explains(s.erlHigh, eMic, n) {
		// Likewise after the alignment was disturbed (the timeline may
		// be off by the jump).
		echo = true
		s.guarded.Add(1)
	}
	// The learned echo path applied to the far end's recent peak explains
	// the mic's level (within 6 dB, as the onset guard).
	explained := s.farHang > 0 && s.explains(s.erl, eMic, n)
	if clippedEnd >= 0 {
		// The hold runs from the end of the last clipped frame.
		s.satHold = saturatedHoldMS*Rate/1000 + n - clippedEnd + n
		if explained {
			// The robot's own echo clipped the mic: counted for whoever
			// lowers the robot's voice.
			s.echoClips.Add(int64(clipped))
		}
	}
	if s.satHold > 0 {
		// The mic clipped: a saturated capture is an echo the canceller
		// cannot model (the clipping is not in its linear echo path), so
		// what it leaves of it is no evidence of the user. While the far
		// end plays, such a read and the reads saturatedHoldMS after it
		// are echo if the learned echo path applied to the far end's
		// recent peak explains their level (within 6 dB, as the onset
		// guard): a user who clips the mic over a quieter echo, or well
		// above a loud one, is not held.
		if !echo && explained {
			echo = true
			s.saturatedReads.Add(1)
		}
		s.satHold = max(s.satHold-n, 0)
	}
	if linAudible && !echo && !noiseOnly && s.farHang > 0 {
		// The guards found the user, and the linear output holds more
		// than the filter leaves of the echo: the VAD hears the linear
		// output, not what the suppressor left of the user.
		fr := n / FrameSamples * FrameSamples
		copy(s.dec[:fr], dst[:fr])
		eDec, eDecLate = eLin, eLate
	}
	if s.rv != nil {
		// The reverberation guard (ReverbGuardMS): the decision signal
		// holds no more than the room's reverberation beyond the filter
		// it comes from would (within reverbDecRatio): the main
		// canceller's own (rvMainMS: WebRTC's AEC2 covers 128 ms, so
		// where its suppressor lets the echo through, as at a word's
		// onset after a short gap, it leaves the reverberation from
		// there on, not only what lies beyond the linear filter's 256
		// ms). With a linear filter beside the canceller, its output
		// must hold no more than the reverberation beyond it either
		// (within reverbLinearRatio), and a user the suppressor held
		// down is still in it.
		//
		// Once the far end has been silent for reverbSilentMS (the end
		// of a reply, or a long pause), a linear output the linear guard
		// found no louder than what the filter typically leaves of the
		// recent echo (!linAudible) is no evidence of the user either:
		// there the filter has not yet removed the early part of the last
		// words' echo, and its output lay 0.2-2 dB over the 4 dB allowed.
		during := !echo && !noiseOnly && !linUser && s.farHang > 0 && eDec < reverbDecRatio*eDecLate &&
			(s.lin == nil || eLin < reverbLinearRatio*eLate || (!linAudible && s.farHang <= (farTail-reverbSilentMS)*Rate/1000))
		// After the reply (farTail past) the room's late reverberation
		// of its last words is still in the mic while the prediction
		// stays above the noise floor: in a quiet room with an RT60 of
		// 0.8 s, 40 dB and more over it. A read holding no more than
		// that (within reverbLinearRatio: the canceller's suppressor has
		// released and both outputs hold the late reverberation) starts
		// no utterance either; a user who answers the robot is louder
		// than its fading echo.
		after := s.farHang == 0 && s.haveNoise && eLate > s.noiseEnergy(n) && eDec < reverbLinearRatio*eLate
		if !startEcho && s.echoReads >= convergedReads && (during || after) {
			startEcho = true
			s.rvHeld.Add(1)
		}
		s.storeRoom()
	}
	if refLate && !echo {
		// The speaker was handed the far end's audio that the reference
		// did not hold yet when this read needed it (the goroutine that
		// records it ran late: a loaded machine): the canceller had no
		// far end for it, and its echo would pass as the user. Held as
		// echo, after every statistic above (none learnt from it).
		echo = true
		s.refLate.Add(1)
	}
	if silHold && !echo {
		// A read the silent-speaker detector holds: no echo where the
		// learned path predicts a loud one (so no user either), or one
		// that may hold the echo before the canceller was given its far
		// end again.
		echo = true
		s.silentHeld.Add(1)
	}
	s.echoOnly.Store(s.cfg.DoubleTalkDB > 0 && (echo || startEcho || noiseOnly))
	if s.lin != nil {
		s.onsetUse = s.farHang > 0 && reductionDB(eMic, eDec) < onsetRoomDB
	}
	if s.est != nil && s.farHang > 0 && !echo && !noiseOnly {
		// The user over the robot's voice: no delay estimate from a
		// window holding them (DelayEstimator.NearEnd).
		s.est.NearEnd()
	}
	s.echoFree.Store(s.farHang == 0 && !refLate)
	if s.lin != nil && s.lin.Gated() {
		s.gate(dst[:n/FrameSamples*FrameSamples], s.farHang > 0 || refLate, !(echo || noiseOnly))
	}
	return n, nil
}

// lostRead handles a read of n samples that the source reported as a
// stand-in (Lost), or with digital silence (digitalSilence) in a room
// whose noise floor is above outageRoomDB; the caller cleared it. The mic
// delivered nothing (hw/portaudio's Source pads a device outage with
// silence, seconds while a USB mic is reopened; a muted mic). Given to the
// canceller with the far end, it taught it that the echo path had gone:
// the speex linear filter diverged and was reset, and the robot's echo
// coming back with the mic passed for the user (duplex-bench
// --mic-dropout-ms 2000 every 20 s, pink noise at SNR 10 dB: 32 false
// barge-ins in 100 replies); given silence at both ends instead, WebRTC's
// suppressor learnt a silent room and held the room's noise 10–40 dB down
// for seconds after the outage. So nothing sees it: not the canceller,
// nor the delay and drift estimators, the noise floor, the echo path, the
// reduction statistics or the reverberation guard; the mic timeline
// advances as usual. The read stays silence (the uplink holds no user:
// EchoDominated), the far end's hang time is kept, and the read after the
// outage starts the disturbance guard.
func (s *Source) lostRead(n int) {
	s.lost = true
	s.lostReads.Add(1)
	var eFar float64
	for off := 0; off+FrameSamples <= n; off += FrameSamples {
		s.ref.readAt(s.farRaw, s.next-int64(s.bulk))
		eFar += energy(s.farRaw)
		s.advance()
	}
	s.farPlays(n, eFar)
	if s.lin != nil {
		clear(s.dec[:n])
		clear(s.onset[:n])
		s.onsetUse = false
	}
	s.echoOnly.Store(s.cfg.DoubleTalkDB > 0)
	s.echoFree.Store(false)
}

// advance moves the mic timeline past a frame: FrameSamples, at the
// estimated clock ratio with drift compensation.
func (s *Source) advance() {
	if s.drift != nil {
		p := s.frac + FrameSamples*s.ratio
		k := math.Floor(p)
		s.next += int64(k)
		s.frac = p - k
	} else {
		s.next += FrameSamples
	}
	s.frames.Add(1)
}

// farPlays updates the far end's hang time with a read of n samples whose
// far end had energy eFar.
func (s *Source) farPlays(n int, eFar float64) {
	if eFar > farActive*farActive*float64(n) {
		if s.farHang == 0 {
			s.farSince = 0
		}
		s.farHang = farTail * Rate / 1000
		s.farSince += n
	} else {
		s.farHang = max(s.farHang-n, 0)
	}
}

// silentSpeaker runs the silent-speaker detector (SilentSpeaker) on a read
// of n samples (mic and reference far-end energies) and reports whether it
// holds the read.
func (s *Source) silentSpeaker(n int, eMic, eFar float64) bool {
	if !s.cfg.SilentSpeaker {
		return false
	}
	hold, back := s.sil.push(n, eMic, eFar, s.echoReads >= convergedReads, s.farHang == 0)
	if back {
		s.silentBack = true
	}
	s.silents.Store(int64(s.sil.episodes))
	return hold
}

// SilentSpeakers counts the times the speaker was taken for silent
// (SilentSpeaker). Any goroutine.
func (s *Source) SilentSpeakers() int64 { return s.silents.Load() }

// SilentHeld counts the reads the silent-speaker detector held that the
// other tests let through. Any goroutine.
func (s *Source) SilentHeld() int64 { return s.silentHeld.Load() }

// lostReporter is capture.LostReporter: a source that says when a Read
// returned a stand-in for audio the device did not capture.
type lostReporter interface{ Lost() bool }

// Lost reports whether the last Read was an outage's (lostRead): the
// source said so (capture.LostReporter, hw/portaudio's Source while the
// device is gone), or digital silence in an audible room. Read goroutine,
// after Read.
func (s *Source) Lost() bool { return s.lost }

// LostReads counts the reads of an outage (lostRead): a mic that
// delivered nothing. Any goroutine.
func (s *Source) LostReads() int64 { return s.lostReads.Load() }

// digitalSilence reports whether p holds a mic outage: a run of
// silenceRun samples of exact zeros (or p is shorter and all zeros). A
// real mic's noise does not stay at exactly 0 for that long; an outage's
// first and last reads hold the room for the rest, and are lost as a
// whole (the canceller would see the echo vanish in mid-read; the VAD's
// floor followed the gap's part down by 10 dB and more, and the room's
// next read was speech).
func digitalSilence(p []int16) bool {
	run := pcm.ZeroRun(p)
	return run >= silenceRun || run == len(p)
}

// silenceRun: 4 ms of exact zeros (digitalSilence; the capture pump's
// partialZeros is the same run).
const silenceRun = 64

// outageRoomDB: digital silence is a mic outage (lostRead) once the room's
// noise floor (noiseDB) is above this. A simulated room without noise
// gives exact zeros wherever the echo is absent (the far end's first
// 20–250 ms after a pause, before its echo arrives; the echo's decay
// below 1 LSB in the reply's pauses): those are the room, and the
// canceller must see the far end there (taking digital silence where the
// learned echo path expected the echo for an outage was tried: ERLE after
// 2 s fell from 55 to 23 dB in such a room, and 1–2 of 20–30 barge-ins
// were lost). No real mic and room sit this close to digital silence, and
// a room this quiet cannot fool the VAD when it comes back (capture's
// floor is at least -70 dBFS).
const outageRoomDB = -90.0

// reverbLinearRatio: the reverberation guard holds a read only while the
// linear filter's output is at most 4 dB above the predicted late
// reverberation (energy ratio). Measured on per-read traces (RT60 0.8 s):
// on the reads the guard would hold, the linear output lay 0 dB from the
// prediction at the median (90th percentile +2.6 dB) in a quiet room's
// far-end-only replies, and +7 dB (10th percentile −0.4 dB) while a user
// talked over the robot at SER −10 dB.
const reverbLinearRatio = 2.5

// reverbDecRatio: likewise for the decision signal against the
// reverberation beyond the main canceller's own filter (4 dB, the linear
// output's allowance). A decision signal that had to stay under that
// prediction (as before 2026-12-07, and under the prediction beyond the
// linear filter's 256 ms) started utterances in a 1.5 s room at the
// onsets of words after short gaps, 0-2 dB over it, where AEC2's
// suppressor let the echo through (duplex-bench --rt60 1.5 --drr-db -3,
// 30 replies: 8 and 6 false barge-ins; docs/benchmarks.md).
const reverbDecRatio = 2.5

// reverbSilentMS: how long the far end must have been silent before the
// reverberation guard holds a read whose linear output the linear guard
// did not find audible, whatever its level against the prediction
// (measured, docs/benchmarks.md "The reverberation guard after the
// reply": with every far-end-silent read, a user's "Excuse me" in a
// pause of the reply was lost once in 10; from 200 ms, none).
const reverbSilentMS = 200

// ReverbHeld counts the reads the reverberation guard held
// (ReverbGuardMS): they would have started an utterance.
func (s *Source) ReverbHeld() int64 { return s.rvHeld.Load() }

// storeRoom publishes the reverberation model for other goroutines (Room,
// RoomRT60).
func (s *Source) storeRoom() {
	s.rvRT60.Store(math.Float64bits(s.rv.RT60()))
	if m, ok := s.rv.Model(); ok {
		s.rvLevel.Store(math.Float64bits(m.LevelDB))
		s.rvReady.Store(true)
	}
}

// ErrNoReverbGuard: RestoreRoom on a Source without the reverberation
// guard (SourceConfig.ReverbGuardMS 0).
var ErrNoReverbGuard = errors.New("aec: the reverberation guard is off: no room model to restore")

// RestoreRoom starts the reverberation guard from a room model learnt
// before (Room, kept across a restart): it holds the tail of the robot's
// voice from its first reply instead of after the room's first long
// pauses, and learns on from the room as usual. Call it before the first
// Read. A model outside reverb's limits is refused (reverb.ErrModel).
func (s *Source) RestoreRoom(m reverb.Model) error {
	if s.rv == nil {
		return ErrNoReverbGuard
	}
	if err := s.rv.Restore(m); err != nil {
		return err
	}
	s.storeRoom()
	return nil
}

// Room is the reverberation guard's room model, and whether there is one
// (learnt, or restored by RestoreRoom), to keep across restarts. Any
// goroutine.
func (s *Source) Room() (reverb.Model, bool) {
	if !s.rvReady.Load() {
		return reverb.Model{}, false
	}
	return reverb.Model{RT60: math.Float64frombits(s.rvRT60.Load()), LevelDB: math.Float64frombits(s.rvLevel.Load())}, true
}

// RoomRT60 is the reverberation time the reverberation guard has learnt
// from the mic, 0 while unknown or with the guard off.
func (s *Source) RoomRT60() float64 { return math.Float64frombits(s.rvRT60.Load()) }

// linearReady reports whether the linear filter's typical reduction is
// known and meaningful: measured, on a locked drift estimate, with a
// learned echo path.
func (s *Source) linearReady() bool {
	return s.linRed.Ready() && (s.drift == nil || s.driftLocked) && s.erl > 0
}

// linearUser updates the running median of the linear filter's reduction
// (LinearGuardDB) and reports whether this read of n samples holds
// something the linear filter cannot remove (user): its reduction is more
// than LinearGuardDB below the median, its output LinearGuardDB above the
// typical residual of the recent echo peak and more than NoiseGuardDB
// above the output's noise floor; audible is the last two tests alone (the
// linear output holds more than echo residual and noise, worth the VAD's
// ear when the other guards find the user). Before the median exists:
// false.
func (s *Source) linearUser(n int, eFar float64, farNow, echo bool, eMic, eLin float64) (user, audible bool) {
	held := s.burstHold > 0
	s.burstHold = max(s.burstHold-n, 0)
	if s.lin == nil || s.cfg.LinearGuardDB <= 0 || s.farHang == 0 || eMic <= 0 {
		return false, false
	}
	// A near-end burst (see linearBurstHoldMS): a read the learned echo
	// path does not explain (the mic more than 6 dB over it, as the onset
	// guard) starts the hold; while it runs, reads it explains again are
	// not the user to this guard (its statistics still take them in).
	standDown := false
	if s.erl > 0 {
		if !s.explains(s.erl, eMic, n) {
			s.burstHold = linearBurstHoldMS * Rate / 1000
		} else {
			standDown = held
		}
	}
	// The reduction is the echo's: the room noise the linear output holds
	// is taken out first (see linearNoiseDB).
	eLinRaw := eLin
	if s.haveNoise {
		eLin = max(eLin-s.linearNoise(n), eLin*linearNoiseRatio)
	}
	r := reductionDB(eMic, eLin)
	if farNow && s.echoReads >= convergedReads {
		s.linRed.Push(r)
	}
	if !s.linearReady() {
		return false, false
	}
	// The linear output must also exceed, by the margin, the residual the
	// linear filter typically leaves of the loudest recent echo (the
	// learned echo path applied to the far end's decaying peak): a read in
	// a pause of the reply has little echo to reduce, so its reduction
	// alone falls below the median without the user (measured: 92 false
	// barge-ins in 30 replies without this test). Against the echo of the
	// moment instead of the recent peak (an envelope falling 7.5 dB per
	// 100 ms), a room with an RT60 of 0.8 s made 118 false barge-ins in 30
	// replies: the linear filter leaves the late reverberation.
	//
	// In a pause of the reply (the far end silent, its echo's tail still
	// in the room) the filter's typical reduction over-promises: it is
	// measured while the far end plays, where the direct path it models
	// well dominates the mic, but in the pause the mic holds the late
	// reverberation it models least. There the residual is the 10th
	// percentile of what the filter actually left in earlier pauses,
	// relative to the same peak (reads the canceller called echo),
	// when that is lower. Measured with a 256 ms filter in an RT60 0.3 s
	// room (per-read traces): 42 dB typical reduction, but in a pause
	// 100–200 ms after the last word the filter's output stayed 28–32 dB
	// under that word's echo while the room's echo fell away; through the
	// 10 dB margin those reads passed as the user (1–2 false barge-ins in
	// 30 replies on three scenes). With 128 ms the typical reduction was
	// 28 dB and the same output stayed under the residual.
	peak := s.erl * s.farPeak * float64(n)
	red := s.linRed.Value()
	// A pause is also a far end pauseDropDB under its recent peak: a
	// recorded voice's pauses hold its background (far above farActive),
	// and there too the mic holds the earlier words' reverberation.
	dropped := eFar < s.farPeak*float64(n)*math.Pow(10, -pauseDropDB/10)
	pause := (!farNow || dropped) && eLin > 0 && peak > 0
	if pause && s.pauseRed.N() >= pauseWarmup {
		red = min(red, s.pauseRed.Value())
	}
	// And never more than linearResidualCapDB under the peak: in a quiet
	// room the filter's median reduction reaches 48 dB, but it removes
	// only 25–31 dB of the 1–10 % of the reply's sounds it fits least
	// (a word's onset after a quieter one), so the median less the margin
	// promised more than the filter gives there.
	residual := math.Pow(10, -min(red-s.cfg.LinearGuardDB, linearResidualCapDB)/10) * peak
	if pr := 10 * math.Log10(peak/eLin); pause && echo && s.echoReads >= convergedReads && pr >= 2*s.cfg.LinearGuardDB {
		// Only reads twice the margin under the peak: a user the
		// suppressor silenced (echo), 10–15 dB under the echo's peak at
		// SER −10 dB, must not teach the filter's residual.
		s.pauseRed.Push(pr)
	}
	linLevel := 10*math.Log10(eLinRaw/float64(n)+1e-3) - fullScaleDB
	if standDown || !s.haveNoise || linLevel < s.noiseDB+max(s.cfg.NoiseGuardDB, 0) || eLin <= residual {
		return false, false
	}
	// Audible: worth the VAD's ear when the other guards found the user.
	// User (overriding them): the linear filter's own reduction fell by
	// the margin too.
	user = r < s.linRed.Value()-s.cfg.LinearGuardDB
	audible = true
	return user, audible
}

// linearNoiseDB: the linear guard judges the linear filter's reduction of
// the echo, not of the echo and the room's noise: before the reduction
// (and the residual it predicts) is measured, the room's noise
// (linearNoise: its mean energy) is taken out of the linear output's
// energy, by at most this many dB. In a
// noisy room the filter's output holds the noise it cannot remove, so its
// measured reduction while the robot speaks was the echo-to-noise ratio
// (pink noise 20 dB under the echo: a median of 16-18 dB where the filter
// removes 30 dB and more of the echo), and the guard's margin below it
// left no room for a user 10 dB under the echo: with noise 10 dB under the
// user, 63 of 100 barge-ins at SER -10 dB were heard within 300 ms, and a
// user the suppressor held down for a whole phrase was not heard at all
// (docs/benchmarks.md "A linear guard that hears through the noise").
// The read's own output must still be NoiseGuardDB above the noise floor.
const linearNoiseDB = 20.0

// linearBurstHoldMS: after a near-end burst while the far end plays (a
// read the learned echo path does not explain: a knock on the chassis, a
// clunk, a loud word), the linear guard stands down for this long in the
// reads the echo path explains again. The linear filter (speex MDF)
// adapts on the burst, and for a few hundred milliseconds after it its
// output holds the robot's echo 15-30 dB less reduced than before (per-read
// traces: a knock 10 dB over the room noise left the filter's output
// within 0-5 dB of the mic for 200 ms and more, where the guard's median
// reduction was 28 dB), which the guard took for the user, and the tail of
// the knock started an utterance (duplex-bench, knocks at 10 dB SNR: 5 false
// barge-ins in 100 replies, 2 with the hold). A user 10 dB under the echo
// (the case the guard is for) leaves the reads explained and starts no
// hold; one who is louder than the echo starts it, but is heard in the
// canceller's own output, and the hold runs only while the mic falls back
// to what the echo explains. Only the guard's decision stands down: its
// median and pause statistics still take those reads in (skipping them
// kept the median high after a loud user's words, and the robot's echo
// through the filter the user had disturbed passed as the user: 3 false
// barge-ins in 50 replies at SER +6 dB, none with them taken in).
const linearBurstHoldMS = 500

// linearNoiseRatio is linearNoiseDB as an energy ratio (10^(−20/10)).
const linearNoiseRatio = 0.01

// linearStartReads: the linear filter's median reduction (linRed) starts
// at the median of its first this many reads with the far end playing
// (half a second of 20 ms reads), and the linear guard and the start
// threshold's cap wait for it. Started at its first read alone, one odd
// read set it: at +200 ppm the first was −46 dB (the linear output far
// above the mic on a drifting path), the median then climbed 0.2 dB a
// read, and for 8 s the cap held the start threshold at the fixed 12 dB,
// so a user in the first reply after the drift lock, reduced 12–25 dB by
// the suppressor, was heard a second late (h1–h20 over far-us at
// +200 ppm: 84/100 within 300 ms, 96 before the cap existed).
const linearStartReads = 25

// pauseQuantile: the quantile of the linear filter's reduction in the
// reply's pauses taken as its residual there (linearUser).
const pauseQuantile = 0.1

// linearResidualCapDB: linearUser's residual lies at most this far under
// the recent echo peak. Measured (per-read traces, quiet rooms of delay
// 20–250 ms, drift 100–200 ppm, 50 replies each): the reads the linear
// guard took for the user with the far end alone lay 29–42 dB under the
// peak (the filter's median reduction there 44–49 dB; 7–38 false
// barge-ins in 50 replies); a user at SER −10 dB lies 4–25 dB under it.
// Where the median less the margin is lower (noise, reverberation, double
// talk) the cap changes nothing.
const linearResidualCapDB = 28.0

// pauseDropDB: a far end this far under its decaying peak counts as a pause
// of the reply for linearUser.
const pauseDropDB = 15.0

// pauseWarmup: pause reads (2 s of 20 ms reads) before the pauses'
// quantile is used; quantileStepDB: its step.
const (
	pauseWarmup    = 100
	quantileStepDB = 0.1
)

// LinearGuarded counts reads the linear guard (LinearGuardDB) found the
// user in that the main canceller's output called echo or noise. Any
// goroutine.
func (s *Source) LinearGuarded() int64 { return s.linUsed.Load() }

// disturbance tracks the far end's decaying peak power and whether the
// disturbance guard holds for this read of n samples with far-end energy
// eFar (farNow: the far end plays; reduced: the canceller removed more
// than the double-talk threshold): it starts on a re-anchoring of either
// timeline (disturbGuard) or a move of the far end (shiftGuard) and
// lapses after recoveredMS of reduced reads in a row.
func (s *Source) disturbance(n int, eFar float64, farNow, reduced bool) bool {
	s.farPeak = decayPeak(s.farPeak, eFar, n)
	start := func(ms int) {
		s.disturbed, s.recovered = max(s.disturbed, ms*Rate/1000), 0
	}
	if j := s.ref.Jumps(); j != s.seenJumps {
		s.seenJumps = j
		start(disturbGuard)
	}
	if s.silentBack {
		s.silentBack = false
		start(disturbGuard)
	}
	if s.dropouts != s.seenDropouts {
		s.seenDropouts = s.dropouts
		start(disturbGuard)
	}
	if s.anchors != s.seenAnchors {
		// The first anchoring is the start, not a disturbance.
		if s.seenAnchors > 0 {
			start(disturbGuard)
		}
		s.seenAnchors = s.anchors
	}
	if sh := s.shifts.Load(); sh != s.seenShifts {
		s.seenShifts = sh
		start(shiftGuard)
	}
	if s.disturbed == 0 {
		return false
	}
	switch {
	case farNow && reduced:
		s.recovered += n
	case farNow:
		s.recovered = 0
	}
	if s.recovered >= recoveredMS*Rate/1000 {
		s.disturbed = 0
		return false
	}
	s.disturbed = max(s.disturbed-n, 0)
	return true
}

// Guarded counts reads the disturbance guard called echo that the
// canceller's reduction alone would have let through as the user. Any
// goroutine.
func (s *Source) Guarded() int64 { return s.guarded.Load() }

// gateHoldMS: with a linear-gated uplink, how long the linear output keeps
// going up after the last read the guard found more than echo in (the
// gaps between the user's words).
const gateHoldMS = 200

// gateOnReads: the linear output goes up after this many consecutive reads
// with the user over the far end (an isolated read the guard lets through
// is more often a burst of residual echo than the user, whose onset the
// pump needs several reads for anyway).
const gateOnReads = 2

// gate mixes the uplink (up: the linear output) with the canceller's
// (s.dec): the linear one while the far end is silent, and while it plays
// when the user talks and for gateHoldMS after; the canceller's otherwise,
// ramped over the read. The hold is armed only by the user over the far
// end, so a reply starting after a pause goes up cancelled at once.
func (s *Source) gate(up []int16, far, user bool) {
	if far && user {
		s.userRun++
	} else {
		s.userRun = 0
	}
	switch {
	case !far:
		s.hold = 0
	case s.userRun >= gateOnReads:
		s.hold = gateHoldMS * Rate / 1000
	default:
		s.hold = max(0, s.hold-len(up))
	}
	target := 0.0
	if !far || s.hold > 0 {
		target = 1
	}
	if target == s.gain && (target == 1 || target == 0) {
		if target == 0 {
			copy(up, s.dec)
		}
		return
	}
	for i := range up {
		g := s.gain + (target-s.gain)*float64(i+1)/float64(len(up))
		up[i] = int16(math.Round(g*float64(up[i]) + (1-g)*float64(s.dec[i])))
	}
	s.gain = target
}

// Double talk for cancellers that adapt to it (doubleTalker): on after
// dtOnReads reads of the far end playing with less echo reduction than the
// guard threshold, off after dtOffReads echo-dominated reads.
const (
	dtOnReads  = 2
	dtOffReads = 25
)

func (s *Source) doubleTalk(user, echo bool) {
	switch {
	case user:
		s.dtRun++
		s.echoRun = 0
	case echo:
		s.echoRun++
		s.dtRun = 0
	}
	if !s.dtOn && s.dtRun >= dtOnReads {
		s.dtOn = true
		s.dt.DoubleTalk(true)
	} else if s.dtOn && s.echoRun >= dtOffReads {
		s.dtOn = false
		s.dt.DoubleTalk(false)
	}
}

// maxReductionDB caps one read's echo reduction (a suppressor may output
// digital silence); medianStepDB is the running median's step per read
// (10 dB per second of 20 ms reads).
const (
	maxReductionDB = 60.0
	medianStepDB   = 0.2
)

// reductionDB is one read's reduction, mic energy over output energy in
// dB, capped at maxReductionDB (a suppressor may output digital silence).
func reductionDB(eMic, eOut float64) float64 {
	if eOut <= 0 {
		return maxReductionDB
	}
	return min(10*math.Log10(eMic/eOut), maxReductionDB)
}

// saturationLevel is the sample magnitude from which a mic frame counts
// as clipped (full scale less about 0.1 dB: converters and the sim clamp
// at ±32767, and a limiter in a USB mic stops just short of it).
const saturationLevel = 32400

// saturatedHoldMS: how long after a clipped mic frame reads with the far
// end playing count as echo (the canceller's filter, fed the clipped
// frame, leaves a burst of residual for a few reads after it).
const saturatedHoldMS = 100

// saturated reports whether any sample of a mic frame is at full scale.
func saturated(f []int16) bool {
	for _, v := range f {
		if v >= saturationLevel || v <= -saturationLevel {
			return true
		}
	}
	return false
}

// RefLate counts reads held as echo, that the other tests let through,
// because the speaker had been handed far-end audio that the reference did
// not hold yet when the read needed it: the speaker's writer recorded it
// late (a loaded machine), so the canceller had nothing to cancel the echo
// with. Any goroutine.
func (s *Source) RefLate() int64 { return s.refLate.Load() }

// Saturated counts reads the mic's clipping made count as echo that the
// other tests would have let through as the user. Any goroutine.
func (s *Source) Saturated() int64 { return s.saturatedReads.Load() }

// EchoClips counts mic frames that clipped while the far end played and
// whose level the learned echo path explains (within 6 dB of the far end's
// recent peak through it): the robot's own voice overdrove the mic, which
// no canceller can undo (package clipguard lowers the voice on it). A user
// who clips the mic well above the echo is not counted. Any goroutine.
func (s *Source) EchoClips() int64 { return s.echoClips.Load() }

// The output noise floor tracker's steps per 20 ms read (dB), and full
// scale in dB of per-sample energy (20·log10(32768)).
const (
	noiseDownDB = 0.18
	noiseUpDB   = 0.02
	frame20     = 20 * Rate / 1000
	fullScaleDB = 90.309
)

// NoiseFloorDB is the canceller output's noise floor (dBFS) tracked while
// the far end is silent, and whether it is known yet. Capture goroutine.
func (s *Source) NoiseFloorDB() (float64, bool) { return s.noiseDB, s.haveNoise }

// noiseMeanGateDB and noiseMeanStep: the output's mean noise energy
// (Source.noiseMean) is a running mean (0.02 per 20 ms read, about 1 s) of
// the far-end-silent reads whose output is within 3 dB of the noise floor.
const (
	noiseMeanGateDB = 3.0
	noiseMeanStep   = 0.02
)

// linearNoise is the room noise the linear guard takes out of the linear
// output's energy, for n samples: the output's mean noise energy, or
// before there is one the noise floor. Why the mean: the floor is a 10th
// percentile tracker, about 1.5 dB under the noise's mean in stationary
// noise (per-read traces), so a third of the noise stayed in the linear
// output and still hid a user under the echo (duplex-bench, barge-in at
// SER -10 dB, pink noise 5 dB under the user: 60 of 100 heard within
// 300 ms with the floor, 98 with the mean).
func (s *Source) linearNoise(n int) float64 {
	if s.noiseMean > 0 {
		return s.noiseMean * float64(n)
	}
	return s.noiseEnergy(n)
}

// trackFloor moves a 10th-percentile level tracker (dBFS; have: it has a
// value) towards db, the level of a read of n samples: down noiseDownDB
// and up noiseUpDB per 20 ms.
func trackFloor(floor *float64, have *bool, db float64, n int) {
	switch {
	case !*have:
		*floor, *have = db, true
	case db < *floor:
		*floor -= min(noiseDownDB*float64(n)/frame20, *floor-db)
	default:
		*floor += min(noiseUpDB*float64(n)/frame20, db-*floor)
	}
}

// trackMean moves an exponential mean of the noise's energy per sample
// towards p, that of a read of n samples near the floor (noiseMeanStep per
// 20 ms; a zero mean starts at p).
func trackMean(mean *float64, p float64, n int) {
	if *mean == 0 {
		*mean = p
	} else {
		*mean += noiseMeanStep * float64(n) / frame20 * (p - *mean)
	}
}

// decayPeak returns a decaying peak power per sample (half-life
// farPeakHalfLife) after a read of n samples with energy e.
func decayPeak(peak, e float64, n int) float64 {
	return max(e/float64(n), peak*math.Exp2(-float64(n)*1000/(farPeakHalfLife*Rate)))
}

// explains reports whether an echo path erl (mic/far energy ratio; 0:
// not learnt) applied to the far end's recent peak explains a mic energy
// eMic over n samples, within 6 dB: the test the onset, disturbance and
// saturation guards and the linear guard's burst hold share.
func (s *Source) explains(erl, eMic float64, n int) bool {
	return erl > 0 && eMic < 4*erl*s.farPeak*float64(n)
}

// noiseEnergy is the output's noise floor as the energy of n samples
// (Run goroutine; meaningful once haveNoise).
func (s *Source) noiseEnergy(n int) float64 {
	return math.Pow(10, (s.noiseDB+fullScaleDB)/10) * float64(n)
}

// GuardDB is the current double-talk threshold in dB (see
// SourceConfig.GuardMarginDB). Any goroutine.
func (s *Source) GuardDB() float64 {
	r := math.Float64frombits(s.guardRatio.Load())
	if r <= 0 {
		return s.cfg.DoubleTalkDB
	}
	return 10 * math.Log10(r)
}

// DecisionFrame is, with a linear uplink (Options.Uplink linear or
// linear-gated), the
// canceller's output for the samples the last Read returned: the signal
// the onset guard judged and the VAD should judge, while Read returns the
// linear filter's output (what the gateway hears). nil otherwise. Capture
// goroutine, valid until the next Read.
func (s *Source) DecisionFrame() []int16 {
	if s.lin == nil {
		return nil
	}
	return s.dec[:s.decN]
}

// OnsetFrame is, with a linear uplink, the linear filter's output for the
// samples the last Read returned (what the uplink carries before any
// gating) and whether the capture pump's transient guard should judge a
// sound's onset there (capture.OnsetSignal): while the far end plays and
// the read's decision frame is less than onsetRoomDB below the mic, so
// that it holds something the canceller did not take for echo (the user,
// a knock). The canceller's suppressor lets such a sound through
// abruptly, from near silence, whatever its own onset; the linear output
// keeps the room's. nil, false without a linear uplink. Capture
// goroutine, valid until the next Read.
func (s *Source) OnsetFrame() ([]int16, bool) {
	if s.lin == nil {
		return nil, false
	}
	return s.onset[:s.decN], s.onsetUse
}

// EchoDominated reports whether the last Read held only residual echo: the
// far end was playing and the canceller removed more than DoubleTalkDB. The
// capture pump uses it (capture.OnsetGuard) so the robot's own voice does
// not start an utterance while the user's voice, which the canceller
// cannot remove, still does. Any goroutine.
func (s *Source) EchoDominated() bool { return s.echoOnly.Load() }

// EchoFree reports whether the last Read held no echo at all: the far end
// has been silent for the echo's tail (capture.EchoFree). The capture
// pump starts an utterance on a shorter run of speech then, since no
// residual of the robot's own voice can be in it. Any goroutine.
func (s *Source) EchoFree() bool { return s.echoFree.Load() }

func energy(p []int16) float64 {
	var e float64
	for _, v := range p {
		e += float64(v) * float64(v)
	}
	return e
}
