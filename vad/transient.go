package vad

import (
	"fmt"
	"math"
)

// The transient guard: a knock on the chassis, a clap, a servo's clunk, a
// door or a dropped object is loud and broadband, and every detector here
// calls its first frames speech (measured on a room of knocks every 0.7–3 s:
// spectral started an utterance on almost every one, about 30 a minute;
// docs/benchmarks.md "Knocks, claps and clunks"). What tells such an impulse from
// the start of speech is its envelope: it peaks at once and then only
// decays, exponentially, by several dB per 20 ms, while speech rises into
// a syllable that holds for tens of milliseconds.
//
// The guard follows the level of a run of frames a detector called speech
// (the frames before an utterance may start) and says when the run so far
// is a decaying transient:
//
//   - its onset is abrupt: within the run's first two frames the level of
//     a 4 ms block rises at least transientAttackDB over the block 8 ms
//     before it (a knock goes from the room's level to its peak within a
//     millisecond; a voice rises over tens of milliseconds, and when the
//     detector first calls speech in the middle of a word, as in loud
//     noise, the blocks before were speech already),
//   - the run's peak is in its first two frames (an impulse whose attack
//     falls late in a frame peaks in the next one), and
//   - every frame after the peak lies on or below a line falling DecayDB per
//     20 ms from it (scaled to the frame length; see Observe), and there
//     is at least one such frame.
//
// Once the run has decayed over two or more frames and by three times
// DecayDB the guard latches: a frame that stops decaying is the tail
// reaching the room's noise, not speech, and stays held.
//
// Impulses come in series (a servo's clunk is two clicks, a dropped object
// bounces, footsteps, typing), and a voice may start in a knock's tail. So
// in a run that has decayed, a rise of transientRiseDB over the previous
// frame releases the run at once if it is gradual (a voice rising out of
// the tail) and, once the run has latched, also transientRiseDB over the
// frame it latched at (a voice is heard over the tail; a tail that
// flattens onto a wobbling background, such as the residual of a robot's
// own voice that an echo canceller's linear filter leaves, rises and falls
// by 3 dB from frame to frame under it: measured in full duplex, knocks
// during the robot's replies, 13 false barge-ins in 600 replies without
// this test, 9 with it); an abrupt one is judged as a new onset, the same
// way: held while it and the next frame decide where its peak is,
// released as soon as a frame stays above its decay line (a voice that
// starts with a plosive holds its level), held on if it decays.
//
// Nothing is held longer than transientMaxHoldMS after its latest onset,
// nor a run longer than transientMaxRunMS, whatever its shape, so that a
// voice the guard misjudged is late by at most that, never lost.
//
// The guard never delays speech that does not decay from its first frames:
// with the pump's default min speech (3 frames of 20 ms) an utterance
// starts at the same frame as without it. Speech that does — a short first
// syllable that starts abruptly and is closed by a stop, as in "Ex-cuse
// me" — is held like a knock and starts late (measured in
// docs/benchmarks.md; the capture pump then sends the held syllable in the
// utterance's pre-roll).
const (
	// DefaultTransientDecayDB is the decay per 20 ms that marks a
	// transient unless TransientConfig.DecayDB says otherwise. A knock or
	// servo clunk whose amplitude falls with a time constant of 60 ms
	// decays 2.9 dB per 20 ms, a clap or a ring faster; a room's
	// reverberation at RT60 0.8 s gives 1.5.
	DefaultTransientDecayDB = 1.5
	// MaxTransientDecayDB is the largest DecayDB accepted.
	MaxTransientDecayDB = 20.0
	transientRiseDB     = 3.0  // a rise over the previous frame, after a decay: a new onset
	transientSlackDB    = 1.0  // a frame's level may lie this far above the decay line (noise wobble, most in a low thud)
	transientAttackDB   = 12.0 // an abrupt onset: a 4 ms block this much above the block 8 ms before
	// transientRoomAttackDB is transientAttackDB for the attack judged on
	// an onset signal (FrameOnset): an echo canceller's linear output,
	// where the echo's residual and the room's reverberation of the robot's
	// voice lie under every sound. Measured in full duplex (WebRTC, 0 dB
	// echo, RT60 0.3 s): knocks at 20 dB SNR rose 18–44 dB there, users'
	// first syllables at SER −10 dB 9–13 dB.
	transientRoomAttackDB = 15.0
	transientBlock        = 64 // samples in a block (4 ms at 16 kHz)
	transientMaxHoldMS    = 400
	transientMaxRunMS     = 1000
)

// TransientConfig configures a TransientGuard.
type TransientConfig struct {
	// FrameMS is the length of the frames Observe is given (10..60).
	FrameMS int
	// DecayDB is the decay per 20 ms (at least) that marks a transient:
	// 0 takes DefaultTransientDecayDB; at most MaxTransientDecayDB.
	DecayDB float64
}

// TransientDecay is the guard's decay per 20 ms that a configured value db
// gives: DefaultTransientDecayDB for 0, 0 (off) for a negative value, else
// db. Callers with a config field map it through here.
func TransientDecay(db float64) float64 { return defaultOrOff(db, DefaultTransientDecayDB) }

// TransientGuard tells a decaying impulse from the start of speech in a run
// of frames a detector called speech. It allocates nothing; it is used by
// one goroutine (the capture pump's Run).
type TransientGuard struct {
	decay                     float64 // dB per frame
	maxHold, maxRun, strictAt int     // frames (strictAt: the frame 20 ms after a peak)

	n       int     // frames in the run
	prev    float64 // level of the previous frame
	ref     float64 // level of the latest onset's peak frame
	refAt   int     // its index
	pending bool    // the frame after refAt may still be the peak
	abrupt  bool    // the latest onset's attack was abrupt
	decayed bool    // the run has decayed from an onset (a transient was seen)
	latched bool    // the latest onset decayed far enough to hold a flat tail
	done    bool    // the run is released (not a transient) for good
	gradual bool    // released because the run's first onset was gradual
	top     float64 // level of the frame at which the latest onset latched

	// Kept across runs (Frame): the energies (dB) of the last two blocks,
	// and of the onset signal's (FrameOnset).
	hist, histOnset [2]float64
}

// NewTransientGuard returns a guard for frames of c.FrameMS.
func NewTransientGuard(c TransientConfig) (*TransientGuard, error) {
	if c.FrameMS < 10 || c.FrameMS > 60 {
		return nil, fmt.Errorf("%w: transient guard: frame %d ms out of range 10..60", ErrConfig, c.FrameMS)
	}
	if c.DecayDB < 0 || c.DecayDB > MaxTransientDecayDB || math.IsNaN(c.DecayDB) {
		return nil, fmt.Errorf("%w: transient guard: decay %g dB per 20 ms out of range 0..%g", ErrConfig, c.DecayDB, MaxTransientDecayDB)
	}
	d := c.DecayDB
	if d == 0 {
		d = DefaultTransientDecayDB
	}
	return &TransientGuard{
		decay:    d * float64(c.FrameMS) / 20,
		maxHold:  max(transientMaxHoldMS/c.FrameMS, 1),
		maxRun:   max(transientMaxRunMS/c.FrameMS, 1),
		strictAt: (20 + c.FrameMS - 1) / c.FrameMS,
	}, nil
}

// Reset forgets the run (call when a frame is not speech, or an utterance
// starts).
func (g *TransientGuard) Reset() {
	*g = TransientGuard{decay: g.decay, maxHold: g.maxHold, maxRun: g.maxRun, strictAt: g.strictAt, hist: g.hist, histOnset: g.histOnset}
}

// GradualOnset reports whether the run so far started gradually: no
// abrupt attack in its first two frames, so the guard has released it as
// a voice rising (not a knock, a clap or a clunk) and will not hold it.
// It is false for a run shorter than two frames, an abrupt one, and after
// Reset.
func (g *TransientGuard) GradualOnset() bool { return g.gradual }

// Frame feeds the guard the next 16 kHz frame outside an utterance (what
// the VAD judged) and whether the detector called it speech; it reports
// whether the run of speech frames it ends is a decaying transient, on
// which an utterance must not start yet. Non-speech frames end the run
// (and report false). It measures the frame's level and attack and calls
// Observe; it allocates nothing.
func (g *TransientGuard) Frame(s []int16, speech bool) bool {
	return g.FrameOnset(s, nil, false, speech)
}

// FrameOnset is Frame for a frame whose onset may be judged on another
// signal: onset holds the same 16 kHz samples as heard before any
// suppressor (an echo canceller's linear filter output; nil: none), and
// useOnset says to judge the frame's attack there instead of in s. Level
// and decay are always s's. The onset signal's block history is kept
// apart from s's whenever onset is given, so a switch between the two
// compares blocks of one signal.
//
// Why: a suppressor that held a sound down and then lets it through makes
// its onset abrupt in s whatever the sound (measured in full duplex: a
// user's first syllable over the robot's voice rose 9–13 dB per 8 ms in
// the linear output but from digital silence in the canceller's output,
// and was held like a knock), while a knock is abrupt in both (18–44 dB
// in the linear output). The room signal's attack is judged against
// transientRoomAttackDB.
func (g *TransientGuard) FrameOnset(s, onset []int16, useOnset, speech bool) bool {
	level, attack := g.measure(s, &g.hist)
	if len(onset) == len(s) && len(onset) > 0 {
		_, a := g.measure(onset, &g.histOnset)
		if useOnset {
			attack = a - (transientRoomAttackDB - transientAttackDB)
		}
	}
	if !speech {
		g.Reset()
		return false
	}
	return g.Observe(level, attack)
}

// measure returns the frame's level (dBFS) and its largest rise of a
// block's level over the block 8 ms before (dB), the blocks of the
// previous frame (hist, updated) included.
func (g *TransientGuard) measure(s []int16, hist *[2]float64) (level, attack float64) {
	const fs2 = 32768.0 * 32768.0
	var total float64
	attack = math.Inf(-1)
	for off := 0; off < len(s); off += transientBlock {
		end := off + transientBlock
		if len(s)-end < transientBlock {
			end = len(s) // the remainder joins the last block
		}
		var e float64
		for _, v := range s[off:end] {
			e += float64(v) * float64(v)
		}
		total += e
		db := 10 * math.Log10(e/float64(end-off)/fs2+1e-13)
		attack = max(attack, db-hist[0])
		hist[0], hist[1] = hist[1], db
		if end == len(s) {
			break
		}
	}
	return 10 * math.Log10(total/float64(max(len(s), 1))/fs2+1e-13), attack
}

// Observe adds the next frame of a run of speech frames, at levelDB (its
// broadband level, e.g. dBFS) with attackDB (its largest rise of a 4 ms
// block over the block 8 ms before, see Frame), and reports whether the
// run so far is a decaying transient, on which an utterance must not
// start yet.
//
// The decay is judged against a line from the onset's peak frame falling
// DecayDB per 20 ms: the frame that ends 20 ms after the peak must be at
// least DecayDB below it (a vowel holds its level for 20 ms or more, even
// a short one), the others k times DecayDB less transientSlackDB,
// so the wobble of a frame's level (a low thud has few degrees of freedom
// in 20 ms) in a steady exponential decay does not clear the guard, while
// a voice, which holds its level, leaves the line.
func (g *TransientGuard) Observe(levelDB, attackDB float64) bool {
	i := g.n
	g.n++
	prev := g.prev
	g.prev = levelDB
	abrupt := attackDB >= transientAttackDB
	switch {
	case i == 0:
		g.ref, g.refAt, g.pending, g.abrupt = levelDB, 0, true, abrupt
		return false
	case g.done:
		return false
	case g.n > g.maxRun || i-g.refAt >= g.maxHold:
		g.done = true
		return false
	case g.pending && i == g.refAt+1:
		g.pending = false
		g.abrupt = g.abrupt || abrupt
		if !g.abrupt {
			// A gradual onset: a voice, whatever follows.
			g.done, g.gradual = true, g.refAt == 0
			return false
		}
		if levelDB > g.ref-g.decay {
			// Not a clear fall from the onset's first frame: the attack
			// may have come late in it, and this frame is the peak. Held
			// if the run has decayed before (a new onset in a series).
			g.ref, g.refAt = levelDB, i
			return g.decayed
		}
	case levelDB >= prev+transientRiseDB && !(g.latched && !abrupt && levelDB < g.top+transientRiseDB):
		// (A gradual rise in a latched tail that stays under the level it
		// latched at is the tail wobbling: held below.)
		if !g.decayed || !abrupt {
			// Still rising from the run's start, or rising gradually out
			// of a tail: a voice.
			g.done = true
			return false
		}
		// An abrupt onset after a decay: the next click or bounce, or a
		// voice starting with a plosive in the tail. Held until its peak
		// and a frame after it are seen.
		g.ref, g.refAt, g.pending, g.latched, g.abrupt = levelDB, i, true, false, abrupt
		return true
	}
	k := i - g.refAt
	slack := transientSlackDB
	if k == g.strictAt {
		// 20 ms after the peak the level has fallen by the full decay: a
		// knock falls at once, a vowel holds its level for 20 ms or more.
		slack = 0
	}
	if levelDB > g.ref-g.decay*float64(k)+slack {
		if g.latched {
			return true // the tail flattening at the room's noise
		}
		// Above the decay line: a voice holds or rises.
		g.done = true
		return false
	}
	g.decayed = true
	if k >= 2 && levelDB <= g.ref-3*g.decay {
		if !g.latched {
			g.top = levelDB
		}
		g.latched = true
	}
	return true
}
