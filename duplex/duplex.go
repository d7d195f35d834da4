// Package duplex measures the robot's full-duplex capture chain on a
// simulated echo path: far-end speech (the robot's replies) is handed to the
// speaker tap exactly as the player would, reaches the mic through a
// room.Path with noise and a near-end talker, and the mic goes through the
// real chain — aec.Source (echo canceller + noise suppressor, aligned by
// timestamps and delay estimation) → capture.Pump (VAD with pre-roll,
// start/continue/end flags, framing). Time is a fake clock advanced frame by
// frame, so a run is exact and reproducible and takes only CPU time.
//
// Run reports ERLE in far-end-only stretches, near-end fidelity in
// double-talk, VAD precision/recall/onset, false and true barge-ins and the
// chain's CPU cost. It accepts any far and near recordings;
// `robot-agent duplex-bench` is its command line.
package duplex

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clipguard"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/reverb"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/vad"
	"github.com/robot-agent/robot-agent/volume"
)

// Rates of the far end (TTS, what the player writes) and of the mic.
const (
	FarRate  = 24000
	NearRate = 16000
	frameMS  = 20
	micFrame = NearRate * frameMS / 1000
	farFrame = FarRate * frameMS / 1000
)

// Scenario is one measurement.
type Scenario struct {
	// Far is one reply (24 kHz mono), played Replies times with GapMS of
	// silence between them. Near is one user phrase (16 kHz mono).
	Far, Near []int16
	Replies   int
	GapMS     int
	// LeadMS of silence before the first reply (the noise floor settles).
	LeadMS int
	// Prelude (24 kHz mono), if any, plays after LeadMS and is followed by
	// LeadMS more before the first reply: a start-up sound (warmup.Noise),
	// played at its own level (not scaled to FarDBFS). The pump is gated
	// (starts no utterance) until the first reply starts, as while an
	// agent plays one; the canceller runs throughout.
	Prelude []int16
	// preludeUngated (tests): the pump is not held during the Prelude.
	preludeUngated bool
	// BargeIn places Near once in every reply, starting at a random point
	// (seeded) between 30 % and 60 % of the reply (a phrase too long to end
	// before the next reply lengthens the gaps: bargeInGap); without it Near is not
	// used (far-end only: ERLE and false barge-ins). NoFar plays no replies
	// at all and places Near in each "reply" slot (VAD measurements).
	// Answer places Near once after every reply instead, starting at a
	// random point (seeded) 200-800 ms after the reply's end, in its
	// reverberant tail: a user who answers the robot (the gap grows to
	// hold the phrase: answerGap).
	BargeIn, NoFar, Answer bool
	// FarDBFS is the active level the far end is scaled to (default -20).
	FarDBFS float64
	// SERDB is the speech-to-echo ratio at the mic: near-end active level
	// minus echo active level (echo = far level + echo gain).
	SERDB float64
	// SNRDB is the near-end (nominal, at SERDB) active level over the
	// noise's RMS level; +Inf or 0 with NoiseKind "" or "none": no noise.
	SNRDB float64
	// Room is the echo path; its Noise, NoiseWAV and NoiseDBFS are set from
	// NoiseKind or NoiseWAV and SNRDB.
	Room      room.Config
	NoiseKind string
	// NoiseWAV is a noise recording (room.Config.NoiseWAV) used instead of
	// NoiseKind; at most one of the two.
	NoiseWAV string
	// AEC is the canceller; Align its alignment.
	AEC   aec.Options
	Align aec.SourceConfig
	// RoomModel is a room model learnt before (aec.Source.Room, kept across a
	// restart) the reverberation guard starts from; nil: learnt afresh.
	RoomModel *reverb.Model
	// Capture is the pump configuration (mode vad for barge-in metrics).
	Capture capture.Config
	// SpeakerClock: the agent's clock is the speaker's rather than the
	// mic's, the far end is written at the speaker's pace and plays
	// 80 ms after it is written (see benchSource); needed for negative
	// Room.DriftPPM beyond a minute or two.
	SpeakerClock bool
	// ClipGuard, if non-nil, lowers the robot's voice while its echo
	// clips the mic, as the agent does (package clipguard); nil: off.
	ClipGuard *clipguard.Config
	// MicDropoutMS > 0 makes the mic lose its audio for that long every
	// MicDropoutEveryS seconds (default 20), the first at a Seed-chosen
	// point of the first period after LeadMS: the chain reads digital
	// silence meanwhile, as from hw/portaudio's Source while a USB mic is
	// gone and being reopened. Speech that falls into a gap is lost.
	MicDropoutMS     int
	MicDropoutEveryS float64
	// MicDropoutReported makes the mic say which reads are a dropout's
	// silence (capture.LostReporter), as hw/portaudio's Source does while
	// its device is gone; without it the chain finds them by their
	// digital silence alone.
	MicDropoutReported bool
	// SpeakerDropoutMS > 0 makes the speaker play nothing for that long
	// every SpeakerDropoutEveryS seconds (default 20), the first at a
	// Seed-chosen point of the first period after LeadMS (drawn apart
	// from the mic's): the far end written meanwhile is lost, as while a
	// USB speaker is gone and being reopened (hw/portaudio's Sink then
	// discards it and reports itself down: Up false). With
	// SpeakerDropoutUnreported the speaker still reports itself up, as
	// an amplifier that loses power or a mute switch would.
	SpeakerDropoutMS         int
	SpeakerDropoutEveryS     float64
	SpeakerDropoutUnreported bool
	// SpeakerDropoutAttenDB > 0: in the dropouts the speaker plays this
	// many dB quieter instead of nothing, still reporting itself up (a
	// volume turned down and back up); it implies
	// SpeakerDropoutUnreported.
	SpeakerDropoutAttenDB float64
	// VolumeDownDB > 0: the SpeakerDropoutMS windows are not dropouts but
	// the robot's own volume control (package volume, above the reference
	// tap, as in the agent) turned this many dB down; the speaker plays
	// on. The same steps as SpeakerDropoutAttenDB, made where the agent
	// makes them.
	VolumeDownDB float64
	// Seed for the barge-in positions.
	Seed uint64
	// Uplink, if non-nil, receives the uplink audio (16 kHz mono): every
	// frame the pump delivered at its time, silence elsewhere.
	Uplink func([]int16)
	// Processed, if non-nil, receives the chain's output before the VAD
	// (what continuous mode would send).
	Processed func([]int16)
}

// Result of a Run.
type Result struct {
	AEC, VAD    string
	Seconds     float64 // audio simulated
	ERLEFirst2s float64 // dB, far-end-only frames in the first 2 s of echo
	ERLE        float64 // dB, far-end-only frames after 2 s
	// GuardERLE is ERLE after 2 s of what the onset guard and the VAD
	// judge, when that is not the uplink (aec.Options.Uplink linear: the
	// canceller's output; ERLE is then the linear filter's); NaN otherwise.
	GuardERLE     float64
	NearCorr      float64 // correlation with the clean near end in double-talk (NaN: none)
	Precision     float64 // pump: frames delivered that hold near-end speech
	Recall        float64 // pump: near-end speech frames delivered
	RawPrecision  float64 // detector's raw per-frame decision
	RawRecall     float64
	RawFPR        float64 // raw detector: non-speech frames called speech
	Onsets        []time.Duration
	Clipped       int // phrases whose first speech frame was not delivered
	Phrases       int
	FalseBargeIns int // utterance starts with no near-end speech
	// FalseNoEcho counts the false barge-ins the robot's echo cannot have
	// caused: over the 100 ms before the start the echo at the mic was
	// more than 10 dB below the room noise (the noise alone, e.g. babble,
	// started an utterance, as it would with the robot silent).
	FalseNoEcho int
	// FalseAfterReply counts the false barge-ins that started after a
	// reply's audio had ended (in the gap before the next: the room's
	// echo tail, the suppressor's release).
	FalseAfterReply int
	// FalseBeforeReplies counts the false barge-ins that started before
	// the first reply (in the lead, or during a Prelude and after it).
	FalseBeforeReplies int
	BargeInsIn300ms    int
	// Dropouts is the number of mic dropouts (MicDropoutMS), and
	// DropoutPhrases the phrases left out because they would have fallen
	// into one (not counted in Phrases or any other figure).
	Dropouts, DropoutPhrases int
	// MicLostReads is how many reads the canceller took for a mic
	// outage (aec.Source.LostReads): reported, or digital silence in a
	// room with noise.
	MicLostReads int64
	// SpeakerDropouts is the number of speaker dropouts
	// (SpeakerDropoutMS), and FalseAfterSpeakerDropout the false
	// barge-ins that started within 5 s after one ended.
	SpeakerDropouts, FalseAfterSpeakerDropout int
	// SilentSpeakers is how many times the canceller took the speaker
	// for silent (aec.Source.SilentSpeakers), SilentHeld the reads that
	// held.
	SilentSpeakers, SilentHeld int64
	CPUPerSecond               time.Duration // chain CPU per second of audio
	DelayEstimate              time.Duration
	DelayShifts                int64
	DriftPPM                   float64       // clock offset compensated at the end (aec.Source.DriftPPM)
	GuardDB                    float64       // the onset guard's double-talk threshold at the end
	ChainDelay                 time.Duration // near end's delay through the chain (from the double-talk correlation)
	EchoClips                  int64         // mic frames the robot's echo clipped (aec.Source.EchoClips)
	ReverbHeld                 int64         // reads the reverberation guard held (aec.Source.ReverbHeld)
	RoomRT60                   float64       // the reverberation time it learnt (s; 0: off or unknown)
	RoomModel                  *reverb.Model // its room model at the end (aec.Source.Room), nil: none
	ClipBackoffDB              float64       // how far the clip guard lowered the voice at the end (0: off or never)
}

// OnsetPercentile returns the p-th percentile (0..100) of onset delays, or
// -1 when no onset was detected.
func (r Result) OnsetPercentile(p float64) time.Duration {
	if len(r.Onsets) == 0 {
		return -1
	}
	s := slices.Clone(r.Onsets)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ErrScenario wraps scenario problems.
var ErrScenario = errors.New("duplex: invalid scenario")

type phrase struct{ start, onset, end int } // mic samples

// bargeInSettle: the silence a barge-in phrase that would run into the next
// reply gets after it before that reply (the pump's hangover and the room's
// echo tail; see bargeInGap).
const bargeInSettle = NearRate

// bargeInGap returns the gap (samples) after each reply of replyLen for a
// barge-in phrase of nearLen: gap itself, unless a phrase starting as late
// as a reply places it (60 % in) would run into the next reply; then long
// enough that it ends bargeInSettle before that reply. (Otherwise the user
// would still be talking when the next reply started: no new utterance
// start, no barge-in to count, and the next phrase would overwrite its
// tail.)
func bargeInGap(replyLen, gap, nearLen int) int {
	if end := replyLen*6/10 + nearLen; end > replyLen+gap {
		gap = (end - replyLen + bargeInSettle + micFrame - 1) / micFrame * micFrame
	}
	return gap
}

// An answer (Scenario.Answer) starts this long after the reply's end.
const answerMinMS, answerMaxMS = 200, 800

// answerGap is the gap after each reply (samples) that holds an answer of
// nearLen samples and bargeInSettle after it.
func answerGap(gap, nearLen int) int {
	need := answerMaxMS*NearRate/1000 + nearLen + bargeInSettle
	return max(gap, (need+micFrame-1)/micFrame*micFrame)
}

// AnswerGapMS is the gap after each reply Run uses for an answer of
// nearLen samples (16 kHz) with gapMS asked for (see Scenario.Answer).
func AnswerGapMS(nearLen, gapMS int) int {
	gap := gapMS * NearRate / 1000
	if g := answerGap(gap, nearLen); g != gap {
		return g * 1000 / NearRate
	}
	return gapMS
}

// BargeInGapMS is the gap after each reply Run uses for a barge-in phrase of
// nearLen samples (16 kHz) in replies of farLen samples (24 kHz) with
// gapMS asked for: gapMS, or longer for a phrase that would otherwise run
// into the next reply (see Scenario.BargeIn).
func BargeInGapMS(farLen, nearLen, gapMS int) int {
	gap := gapMS * NearRate / 1000
	if g := bargeInGap(atNearRate(farLen), gap, nearLen); g != gap {
		return g * 1000 / NearRate
	}
	return gapMS
}

// atNearRate converts a length of far-end samples (FarRate) to NearRate, in
// 64 bits: on a 32-bit board (armv7) a reply of more than 5.6 s overflows
// the product in int.
func atNearRate(farSamples int) int { return int(int64(farSamples) * NearRate / FarRate) }

// DefaultMicDropoutEveryS is Scenario.MicDropoutEveryS's default, and
// SpeakerDropoutEveryS's.
const DefaultMicDropoutEveryS = 20

// Streams of the Seed's generator for the dropouts' first positions.
const (
	micDropStream     = 7
	speakerDropStream = 11
)

// dropouts returns gaps of ms over a run of total mic samples after lead:
// one every everyS seconds, the first at a point of the first period drawn
// from stream of seed's generator, as many as end within the run.
func dropouts(seed uint64, ms int, everyS float64, stream uint64, lead, total int) [][2]int {
	every := int(everyS * NearRate)
	n := ms * NearRate / 1000
	rng := rand.New(rand.NewPCG(seed, stream))
	var gaps [][2]int
	for at := lead + rng.IntN(every-n+1); at+n <= total; at += every {
		gaps = append(gaps, [2]int{at, at + n})
	}
	return gaps
}

// overlaps reports whether [from, to) overlaps one of gaps.
func overlaps(gaps [][2]int, from, to int) bool {
	for _, g := range gaps {
		if g[0] < to && g[1] > from {
			return true
		}
	}
	return false
}

// Run runs s.
func Run(s Scenario) (Result, error) {
	if len(s.Far) == 0 && !s.NoFar {
		return Result{}, fmt.Errorf("%w: no far-end audio", ErrScenario)
	}
	if (s.BargeIn || s.NoFar || s.Answer) && len(s.Near) == 0 {
		return Result{}, fmt.Errorf("%w: no near-end audio", ErrScenario)
	}
	if s.Answer && (s.BargeIn || s.NoFar) {
		return Result{}, fmt.Errorf("%w: answer with barge-in or no far end: one place for the near end", ErrScenario)
	}
	if s.Replies <= 0 {
		s.Replies = 1
	}
	if s.FarDBFS == 0 {
		s.FarDBFS = -20
	}
	if s.MicDropoutEveryS == 0 {
		s.MicDropoutEveryS = DefaultMicDropoutEveryS
	}
	if s.MicDropoutMS < 0 || s.MicDropoutMS > 0 && !(float64(s.MicDropoutMS) < s.MicDropoutEveryS*1000) {
		return Result{}, fmt.Errorf("%w: mic dropout of %d ms every %g s: want 0, or a length shorter than the period", ErrScenario, s.MicDropoutMS, s.MicDropoutEveryS)
	}
	if s.SpeakerDropoutEveryS == 0 {
		s.SpeakerDropoutEveryS = DefaultMicDropoutEveryS
	}
	if s.SpeakerDropoutAttenDB < 0 || math.IsNaN(s.SpeakerDropoutAttenDB) {
		return Result{}, fmt.Errorf("%w: speaker dropout attenuation %g dB: want 0 (nothing plays) or more", ErrScenario, s.SpeakerDropoutAttenDB)
	}
	switch {
	case s.VolumeDownDB != 0 && volume.Check(-s.VolumeDownDB) != nil:
		return Result{}, fmt.Errorf("%w: volume down %g dB: want 0 (off) or up to %g", ErrScenario, s.VolumeDownDB, -volume.MinDB)
	case s.VolumeDownDB > 0 && (s.SpeakerDropoutMS == 0 || s.SpeakerDropoutAttenDB > 0 || s.SpeakerDropoutUnreported):
		return Result{}, fmt.Errorf("%w: volume down %g dB: needs the speaker dropouts' windows (SpeakerDropoutMS) and is instead of them (no attenuation, nothing unreported)", ErrScenario, s.VolumeDownDB)
	}
	if s.SpeakerDropoutMS < 0 || s.SpeakerDropoutMS > 0 && !(float64(s.SpeakerDropoutMS) < s.SpeakerDropoutEveryS*1000) {
		return Result{}, fmt.Errorf("%w: speaker dropout of %d ms every %g s: want 0, or a length shorter than the period", ErrScenario, s.SpeakerDropoutMS, s.SpeakerDropoutEveryS)
	}
	far := slices.Clone(s.Far)
	near := slices.Clone(s.Near)
	farLevel := s.FarDBFS
	if len(far) > 0 {
		Scale(far, s.FarDBFS-ActiveLevel(far, FarRate))
	}
	nearLevel := farLevel + s.Room.EchoGainDB + s.SERDB
	if len(near) > 0 {
		Scale(near, nearLevel-ActiveLevel(near, NearRate))
	}
	rc := s.Room
	rc.Noise, rc.NoiseDBFS, rc.NoiseWAV = room.NoiseNone, 0, ""
	kind := s.NoiseKind != "" && s.NoiseKind != room.NoiseNone
	if kind && s.NoiseWAV != "" {
		return Result{}, fmt.Errorf("%w: noise kind %q and noise recording %q: choose one", ErrScenario, s.NoiseKind, s.NoiseWAV)
	}
	if !math.IsInf(s.SNRDB, 1) && (kind || s.NoiseWAV != "") {
		rc.NoiseDBFS = min(nearLevel-s.SNRDB, 0)
		if s.NoiseWAV != "" {
			rc.NoiseWAV = s.NoiseWAV
		} else {
			rc.Noise = s.NoiseKind
		}
	}
	path, err := room.New(rc)
	if err != nil {
		return Result{}, err
	}
	echoCfg := rc
	echoCfg.Noise, echoCfg.NoiseWAV = room.NoiseNone, ""
	echoOnly, _ := room.New(echoCfg)

	// Timeline.
	replyLen := atNearRate(len(far))
	if s.NoFar {
		replyLen = len(near) * 3
	}
	lead := s.LeadMS * NearRate / 1000
	preStart := -1
	if len(s.Prelude) > 0 {
		preStart = lead
		lead += atNearRate(len(s.Prelude)) + lead
	}
	gap := s.GapMS * NearRate / 1000
	if s.BargeIn {
		gap = bargeInGap(replyLen, gap, len(near))
	}
	if s.Answer {
		gap = answerGap(gap, len(near))
	}
	total := lead + s.Replies*(replyLen+gap)
	total = (total + micFrame - 1) / micFrame * micFrame
	nearTL := make([]int16, total)
	farStarts := make([]int, 0, s.Replies)
	var phrases []phrase
	var gaps, spkGaps [][2]int
	if s.MicDropoutMS > 0 {
		gaps = dropouts(s.Seed, s.MicDropoutMS, s.MicDropoutEveryS, micDropStream, lead, total)
	}
	if s.SpeakerDropoutMS > 0 {
		spkGaps = dropouts(s.Seed, s.SpeakerDropoutMS, s.SpeakerDropoutEveryS, speakerDropStream, lead, total)
	}
	lostPhrases := 0
	rng := rand.New(rand.NewPCG(s.Seed, 99))
	nl := Labels(near)
	firstSpeech := 0
	for i, l := range nl {
		if l {
			firstSpeech = i * micFrame
			break
		}
	}
	for r := range s.Replies {
		st := lead + r*(replyLen+gap)
		farStarts = append(farStarts, st)
		var at int // where the near end starts, from the reply's start
		switch {
		case s.BargeIn || s.NoFar:
			lo, hi := replyLen*3/10, replyLen*6/10
			if s.NoFar {
				lo, hi = replyLen/3, replyLen/3+1
			}
			at = lo + rng.IntN(max(hi-lo, 1))
		case s.Answer:
			at = replyLen + (answerMinMS+rng.IntN(answerMaxMS-answerMinMS))*NearRate/1000
		default:
			continue
		}
		at = at / micFrame * micFrame
		if overlaps(gaps, st+at, st+at+len(near)) {
			lostPhrases++ // the user spoke into a mic dropout: not placed
			continue
		}
		n := copy(nearTL[st+at:], near)
		phrases = append(phrases, phrase{start: st + at, onset: st + at + firstSpeech, end: st + at + n})
	}
	labels := Labels(nearTL)

	// The chain.
	clk := clock.NewFake()
	ref, err := aec.NewReference(clk, FarRate)
	if err != nil {
		return Result{}, err
	}
	canc, err := aec.New(s.AEC)
	if err != nil {
		return Result{}, err
	}
	defer canc.Close()
	src := &benchSource{clk: clk, path: path, echo: echoOnly, near: nearTL, total: total,
		mic: make([]int16, micFrame), farBuf: make([]int16, 2*farFrame), echoBuf: make([]int16, micFrame), ratio: 1,
		echoTL: make([]int16, total), micTL: make([]int16, total), t0: clk.Mono()}
	src.gaps, src.spkGaps, src.reportLost = gaps, spkGaps, s.MicDropoutReported
	if s.SpeakerDropoutAttenDB > 0 {
		src.spkAtten = math.Pow(10, -s.SpeakerDropoutAttenDB/20)
	}
	if !s.NoFar {
		src.far, src.farStarts, src.replyLen = far, farStarts, replyLen
	}
	src.prelude, src.preStart = s.Prelude, preStart
	spk := &nullSink{unreported: s.SpeakerDropoutUnreported || s.SpeakerDropoutAttenDB > 0}
	src.speaker = spk
	if s.SpeakerClock {
		src.ratio = 1 / (1 + rc.DriftPPM*1e-6)
		spk.lat = speakerLatency
		src.lead = int64((speakerLatency - frameMS*time.Millisecond) * NearRate / time.Second)
	}
	src.dev = &deviceOut{Tap: aec.NewTap(spk, ref, clk)}
	src.out = src.dev
	asrc := aec.NewSource(src, ref, canc, clk, s.Align)
	if s.RoomModel != nil {
		if err := asrc.RestoreRoom(*s.RoomModel); err != nil {
			return Result{}, fmt.Errorf("duplex: %w", err)
		}
	}
	var guard *clipguard.Sink
	if s.ClipGuard != nil {
		// Above the tap, as in the agent: the room plays what the
		// reference holds.
		if guard, err = clipguard.New(src.dev, asrc, *s.ClipGuard, clk, nil, nil); err != nil {
			return Result{}, err
		}
		src.out = guard
	}
	if s.VolumeDownDB > 0 {
		// Above the tap and the clip guard, as in the agent.
		if src.vol, err = volume.New(src.out, 0, nil); err != nil {
			return Result{}, err
		}
		src.out, src.volDown = src.vol, -s.VolumeDownDB
	}
	proc := &teeSource{AudioSource: asrc, out: make([]int16, total), dec: make([]int16, total), ds: asrc, guard: make([]bool, total/micFrame+1), guardOf: asrc}
	sink := &benchSink{clk: clk, t0: clk.Mono(), uplink: make([]int16, total), scale: 1 / src.ratio}
	cc := s.Capture
	cc.FrameMS = frameMS
	pump, err := capture.NewPump(cc, proc, sink, clk, nil, nil)
	if err != nil {
		return Result{}, err
	}
	defer pump.Close()
	if canc.Kind() != aec.KindNone {
		pump.SetOnsetGuard(asrc) // as the agent does with a canceller
	}
	if preStart >= 0 && !s.preludeUngated {
		pump.SetGate(preludeGate{src: src, until: lead})
	}

	runtime.LockOSThread()
	c0 := threadCPU()
	err = pump.Run(contextBackground())
	chainCPU := threadCPU() - c0 - src.simCPU
	runtime.UnlockOSThread()
	if err != nil && !errors.Is(err, hw.ErrClosed) {
		return Result{}, err
	}

	res := Result{AEC: canc.Kind(), VAD: pump.Config().VAD.Detector, Seconds: float64(total) / NearRate, DelayEstimate: asrc.EstimatedDelay(), DelayShifts: asrc.Shifts(), GuardDB: asrc.GuardDB(), DriftPPM: asrc.DriftPPM(), EchoClips: asrc.EchoClips(), ReverbHeld: asrc.ReverbHeld(), RoomRT60: asrc.RoomRT60(), MicLostReads: asrc.LostReads()}
	if m, ok := asrc.Room(); ok {
		res.RoomModel = &m
	}
	if guard != nil {
		res.ClipBackoffDB = guard.BackoffDB()
	}
	if pump.Config().Mode != capture.ModeVAD {
		res.VAD = "none (continuous)"
	}
	res.CPUPerSecond = time.Duration(float64(chainCPU) / res.Seconds)
	if s.Uplink != nil {
		s.Uplink(sink.uplink)
	}
	if s.Processed != nil {
		s.Processed(proc.out)
	}
	out := proc.out

	// DUPLEX_TRACE=file writes one CSV line per 20 ms frame (frame, echo,
	// near, mic and output level in dBFS, near-end speech label, the onset
	// guard's echo verdict, the decision signal's level, delivered): the
	// per-frame distributions in docs/benchmarks.md come from it.
	if tp := os.Getenv("DUPLEX_TRACE"); tp != "" {
		if f, err := os.Create(tp); err == nil {
			for k := 0; k+micFrame <= total; k += micFrame {
				i := k / micFrame
				fmt.Fprintf(f, "%d,%.1f,%.1f,%.1f,%.1f,%v,%v,%.1f,%v\n", i, dbf(energy(src.echoTL[k:k+micFrame])), dbf(energy(nearTL[k:k+micFrame])), dbf(energy(src.micTL[k:k+micFrame])), dbf(energy(out[k:k+micFrame])), labels[i],
					proc.guard[i], dbf(energy(proc.dec[k:k+micFrame])), i < len(sink.delivered) && sink.delivered[i])
			}
			f.Close()
		}
	}
	// ERLE on far-end-only frames with echo well above the noise.
	var m1, o1, m2, o2, d2 float64
	firstEcho := -1
	for k := 0; k+micFrame <= total; k += micFrame {
		e := energy(src.echoTL[k : k+micFrame])
		if e/micFrame < math.Pow(10, (-50+90.309)/10) || anyLabel(labels, k/micFrame-5, k/micFrame+5) {
			continue
		}
		if firstEcho < 0 {
			firstEcho = k
		}
		mic, o := energy(src.micTL[k:k+micFrame]), energy(out[k:k+micFrame])
		if k-firstEcho < 2*NearRate {
			m1, o1 = m1+mic, o1+o
		} else {
			m2, o2 = m2+mic, o2+o
			d2 += energy(proc.dec[k : k+micFrame])
		}
	}
	res.ERLEFirst2s, res.ERLE = ratioDB(m1, o1), ratioDB(m2, o2)
	res.GuardERLE = math.NaN()
	if proc.dual {
		res.GuardERLE = ratioDB(m2, d2)
	}

	// Near-end fidelity where near and echo overlap.
	var dtOut, dtNear []int16
	for k := 0; k+micFrame <= total; k += micFrame {
		if labels[k/micFrame] && energy(src.echoTL[k:k+micFrame])/micFrame > math.Pow(10, (-50+90.309)/10) {
			dtOut = append(dtOut, out[k:k+micFrame]...)
			dtNear = append(dtNear, nearTL[k:k+micFrame]...)
		}
	}
	res.NearCorr = math.NaN()
	if len(dtNear) > 0 {
		res.NearCorr, res.ChainDelay = bestCorr(dtOut, dtNear, 640)
	}

	// VAD: pump-level frames and raw detector decisions.
	var tp, fp, fn, rtp, rfp, rfn, rtn int
	det, derr := vad.New(vad.Options{Kind: pump.Config().VAD.Detector, FrameMS: frameMS, Mode: pump.Config().VAD.DetectorMode, FastOnset: pump.Config().VAD.FastOnset,
		Energy: vad.EnergyConfig{StartDB: cc.VAD.StartDB, StopDB: cc.VAD.StopDB, MinFloorDBFS: cc.VAD.MinFloorDBFS, FloorRiseDBPerS: cc.VAD.FloorRiseDBPerS}})
	if derr == nil {
		defer det.Close()
	}
	for i, l := range labels {
		if i >= len(sink.delivered) {
			break
		}
		d := sink.delivered[i]
		switch {
		case d && l:
			tp++
		case d && !l:
			fp++
		case !d && l:
			fn++
		}
		if det != nil {
			raw := det.Speech(out[i*micFrame:(i+1)*micFrame], false)
			switch {
			case raw && l:
				rtp++
			case raw && !l:
				rfp++
			case !raw && l:
				rfn++
			default:
				rtn++
			}
		}
	}
	res.Precision, res.Recall = frac(tp, tp+fp), frac(tp, tp+fn)
	res.RawPrecision, res.RawRecall, res.RawFPR = frac(rtp, rtp+rfp), frac(rtp, rtp+rfn), frac(rfp, rfp+rtn)

	// Utterance starts against phrases.
	res.Phrases = len(phrases)
	res.Dropouts, res.DropoutPhrases = len(gaps), lostPhrases
	res.SpeakerDropouts = len(spkGaps)
	res.SilentSpeakers, res.SilentHeld = asrc.SilentSpeakers(), asrc.SilentHeld()
	hang := time.Duration(pump.Config().VAD.HangoverMS) * time.Millisecond
	used := make([]bool, len(phrases))
	for _, st := range sink.starts {
		matched := false
		for i, p := range phrases {
			on := dur(p.onset)
			if st.at >= on-50*time.Millisecond && st.at <= dur(p.end)+hang {
				matched = true
				if !used[i] {
					used[i] = true
					d := st.at - on
					res.Onsets = append(res.Onsets, d)
					if d <= 300*time.Millisecond {
						res.BargeInsIn300ms++
					}
					if st.first > dur(p.onset) {
						res.Clipped++
						debugPhrase("clipped", p, d, gaps, spkGaps)
					}
				}
				break
			}
		}
		if !matched {
			res.FalseBargeIns++
			if k := int(st.at * NearRate / time.Second); rc.HasNoise() && k <= total {
				e := energy(src.echoTL[max(0, k-NearRate/10):k]) / float64(NearRate/10)
				if 10*math.Log10(e+1e-9)-90.309 < rc.NoiseDBFS-10 {
					res.FalseNoEcho++
				}
			}
			rel := st.at - dur(lead)
			if rel >= 0 && rel%dur(replyLen+gap) >= dur(replyLen) {
				res.FalseAfterReply++
			}
			if rel < 0 {
				res.FalseBeforeReplies++
			}
			since := sinceDropout(spkGaps, st.at)
			if since >= 0 && since <= 5*time.Second {
				res.FalseAfterSpeakerDropout++
			}
			if os.Getenv("DUPLEX_DEBUG") != "" {
				fmt.Fprintf(os.Stderr, "false start at %v: reply %d +%v", st.at, int(rel/dur(replyLen+gap)), rel%dur(replyLen+gap))
				if since >= 0 {
					fmt.Fprintf(os.Stderr, ", %v after a speaker dropout", since)
				}
				if d := sinceDropout(gaps, st.at); d >= 0 {
					fmt.Fprintf(os.Stderr, ", %v after a mic dropout", d)
				}
				fmt.Fprintln(os.Stderr)
			}
		}
	}
	for i := range phrases {
		if !used[i] {
			res.Clipped++ // never delivered at all
			debugPhrase("missed", phrases[i], -1, gaps, spkGaps)
		}
	}
	return res, nil
}

// sinceDropout is the time from the end of the last of gaps (in order)
// that ended by at to at; -1 if none did.
func sinceDropout(gaps [][2]int, at time.Duration) time.Duration {
	for _, g := range slices.Backward(gaps) {
		if d := at - dur(g[1]); d >= 0 {
			return d
		}
	}
	return -1
}

// debugPhrase prints a phrase clipped or missed (onset: its detection delay,
// negative: none) with DUPLEX_DEBUG, and how long after a mic dropout it
// started.
func debugPhrase(what string, p phrase, onset time.Duration, gaps, spkGaps [][2]int) {
	if os.Getenv("DUPLEX_DEBUG") == "" {
		return
	}
	msg := fmt.Sprintf("%s phrase at %v", what, dur(p.onset))
	if onset >= 0 {
		msg += fmt.Sprintf(" (detected after %v)", onset)
	}
	for _, d := range []struct {
		gaps [][2]int
		what string
	}{{gaps, "mic"}, {spkGaps, "speaker"}} {
		for _, g := range slices.Backward(d.gaps) {
			if g[0] < p.end && g[1] > p.start {
				msg += fmt.Sprintf(", during a %s dropout (%v before its end)", d.what, dur(g[1]-p.start))
				break
			}
			if g[1] <= p.start {
				msg += fmt.Sprintf(", %v after a %s dropout", dur(p.start-g[1]), d.what)
				break
			}
		}
	}
	fmt.Fprintln(os.Stderr, msg)
}

func dbf(e float64) float64 { return 10*math.Log10(e/micFrame+1e-3) - 90.309 }

func dur(samples int) time.Duration { return time.Duration(samples) * time.Second / NearRate }

func anyLabel(l []bool, from, to int) bool {
	for i := max(from, 0); i <= to && i < len(l); i++ {
		if l[i] {
			return true
		}
	}
	return false
}

func energy(s []int16) float64 {
	var e float64
	for _, v := range s {
		e += float64(v) * float64(v)
	}
	return e
}

func ratioDB(a, b float64) float64 {
	if a == 0 {
		return math.NaN()
	}
	return 10 * math.Log10(a/max(b, 1e-9))
}

func frac(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// bestCorr is the highest normalised correlation of x with y delayed by
// 0..maxLag samples (the chain may delay the near end: WebRTC's AEC
// buffers 64-sample partitions), and that lag.
func bestCorr(x, y []int16, maxLag int) (float64, time.Duration) {
	best, bl := -1.0, 0
	for lag := 0; lag <= maxLag && lag < len(x); lag++ {
		var c, ex, ey float64
		for i := 0; i+lag < len(x); i++ {
			a, b := float64(x[i+lag]), float64(y[i])
			c += a * b
			ex += a * a
			ey += b * b
		}
		if ex > 0 && ey > 0 && c/math.Sqrt(ex*ey) > best {
			best, bl = c/math.Sqrt(ex*ey), lag
		}
	}
	return best, dur(bl)
}
