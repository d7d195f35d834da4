// Package reverb predicts a room's late reverberation of the robot's own
// voice at the mic: the part of the echo beyond the echo cancellers'
// adaptive filters, which neither filter removes and which a residual echo
// suppressor without a reverberation model (WebRTC's AEC2) lets through
// in a quiet, reverberant room.
//
// The model works on energies of 10 ms frames. The echo path's energy
// envelope beyond the direct sound is taken as A·ρ^k at lag k frames (an
// exponential decay: ρ per frame is the reverberation time, A its level),
// so the reverberant energy at the mic is A·S(t) with
//
//	S(t) = ρ·S(t−1) + far(t)
//
// and its part beyond lag L is A·ρ^L·S(t−L). Both parameters are learnt
// from the mic itself, in the far end's pauses: once the far end has been
// silent long enough for its direct echo to pass, the mic holds only the
// decaying reverberation, so the slope of its level (dB per frame) is ρ
// and its ratio to S is A. The slope is a least-squares line through the
// frames of the recent pauses pooled (each pause about its own mean, a
// pause weighted by its length and spread, with a forgetting factor),
// taking of each pause only its free decay (from the pause's start until
// the level first rises: the user answering the robot, a knock; none of
// it when the rise comes within its first 400 ms: a voice from the
// start) and only pauses whose own line decays at a room's rate; A is a
// running median in dB of the pause frames' ratios. Only frames well above
// the noise floor count (one frame of speech-like audio scatters by
// several dB; a line through many does not). This is the free-decay method
// of blind reverberation-time estimation (Lebart, Boucher, Denbigh 2001)
// and the exponential model of WebRTC AEC3's reverberation estimate.
//
// In a long pause of the far end the mic's own falling level is a
// second prediction (Tail.FreeDecay), for while the model is still wrong:
// the line through the pause's recent frames, continued.
package reverb

import (
	"errors"
	"fmt"
	"math"

	"github.com/robot-agent/robot-agent/quantile"
)

// FrameMS is the frame length Push expects.
const FrameMS = 10

// Learning constants.
const (
	// pauseDropDB: a far-end frame this far under the far end's recent
	// peak (half-life peakHalfLifeMS) is silent.
	pauseDropDB    = 35
	peakHalfLifeMS = 150
	// pauseFrames: frames of silence before a frame counts as a pause
	// frame (the direct echo, the cancellers' lead and the first tens of
	// ms of the path have passed).
	pauseFrames = 10
	// aboveNoiseDB: a pause frame's mic energy must exceed the noise floor
	// by this much to be learnt from.
	aboveNoiseDB = 15
	// minPause: pause frames a slope needs.
	minPause = 5
	// A pause's own slope (dB per frame) must lie in this range (RT60
	// 0.1-6 s) for it to count.
	steepestDB, flattestDB = -6.0, -0.1
	// A pause is learnt from only as a free decay: from the first frame
	// the far end's pause counts (pauseFrames), and only until its level
	// rises riseDB over its lowest frame. A reverberant tail only falls
	// (its frames scatter by a few dB); the user answering the robot, or
	// talking while its voice stopped, rises by 10-30 dB, and the line
	// through a phrase of theirs (hundreds of frames, so it outweighed
	// every real pause) had given a 0.3 s room an RT60 of 2-2.5 s.
	//
	// A rise within the first riseWindow frames of the decay discards the
	// pause altogether: the level was someone's voice from the pause's
	// start, not the room's decay. In make run the simulated user talked
	// over the reply and the robot stopped (the barge-in): the first 250
	// ms of the pause held the fall of one of the user's syllables (0.45
	// dB per frame) before the next rose, and that one pause taught a
	// 0.3 s room an RT60 of 0.9-1.4 s. A rise later than that ends a
	// free decay the room made (the user answering after the tail).
	riseDB     = 6
	riseWindow = 40
	// readySpread: the decay is known once the pooled pauses' spread
	// (Σ(x−x̄)², frames²) reaches this: the slope's standard error is then
	// the frames' scatter / √readySpread (3 dB scatter: 0.2 dB per frame).
	readySpread = 200
	// pauseForget: each pause scales the pooled sums by this (a memory of
	// about 100 pauses).
	pauseForget = 0.99
	// startFrames: the level's median starts from the exact median of its
	// first startFrames values; the model predicts nothing before that.
	startFrames = 30
	levelStepDB = 0.1
	// lineForget: each frame scales the free decay's line's sums by this
	// (FreeDecay: a memory of about 200 ms, so the line follows a tail
	// that falls slower than its first frames).
	lineForget = 0.95
)

// Tail learns a room's reverberation and predicts its late part.
//
// Not safe for concurrent use: one goroutine (the mic reader's) pushes.
type Tail struct {
	lag     int           // L, frames
	cxy     float64       // the pooled pauses' Σ(x−x̄)(y−ȳ)
	cxx     float64       // and Σ(x−x̄)²
	level   quantile.Step // A, dB: a running median started at the exact median of its first startFrames values
	s       float64       // S(t)
	hist    []float64
	pos     int
	peak    float64 // the far end's recent peak frame energy
	peakMul float64 // per-frame decay of peak
	silentK float64 // a far frame under peak·silentK is silent
	aboveK  float64 // a pause frame's mic must exceed the noise by this factor
	silent  int     // frames the far end has been silent
	// The current pause's least-squares sums (x: frame, y: mic level dB)
	// over its free decay: from the far end's pause's start until the
	// level rises riseDB over its lowest (in: a pause is in progress,
	// free: it is still a free decay, minY its lowest level).
	m                int
	sx, sy, sxy, sxx float64
	in, free         bool
	minY             float64
	// own: the pooled spread of this room's pauses, a restored decay's
	// included (cxx without an assumed decay's; cxx itself without
	// Assume). The level is learnt once it reaches readySpread, and the
	// model counts as learnt (Model, RT60) once it is above 0.
	own float64
	// rhoPushed: the decay the last Push predicted with (Beyond).
	rhoPushed float64
	// assumedDB: the level assumed (Assume) until the room's own pauses
	// give theirs, for a 0 dB echo path (pathDB moves it: EchoPath);
	// assumed: there is one.
	assumedDB float64
	pathDB    float64
	assumed   bool
	// line: FreeDecay; lineOn: the current pause's line holds (no two
	// frames in a row have risen riseDB over it); k: the pause's frames
	// so far.
	line   float64
	lineOn bool
	k      int
	over   int // frames in a row riseDB over the line
	// The line's sums, each frame weighted lineForget^age: Σw, Σwx,
	// Σwx², Σwy, Σwxy (x: frame of the pause, y: mic level dB).
	l0, l1, l2, ly, lxy float64
}

// New returns a Tail predicting the reverberation beyond lagMS (the
// length of the cancellers' filters), rounded to frames.
func New(lagMS int) *Tail {
	l := max(lagMS/FrameMS, 1)
	return &Tail{
		lag:     l,
		level:   quantile.NewStarted(0.5, levelStepDB, startFrames),
		hist:    make([]float64, l+1),
		peakMul: math.Pow(0.5, float64(FrameMS)/peakHalfLifeMS),
		silentK: math.Pow(10, -pauseDropDB/10.0),
		aboveK:  math.Pow(10, aboveNoiseDB/10.0),
	}
}

// Push takes one 10 ms frame: the far end's energy as handed to the
// canceller (aligned with the mic up to the canceller's lead), the mic's
// energy, and the noise floor's energy for a frame (all in the same
// units, e.g. sums of squared samples). It returns the predicted energy of
// the late reverberation (beyond the lag) in this mic frame, 0 until the
// room is learnt (or assumed: Assume, Restore). It does not allocate.
func (t *Tail) Push(far, mic, noise float64) float64 {
	t.peak = max(far, t.peak*t.peakMul)
	if far < t.peak*t.silentK {
		t.silent++
	} else {
		t.silent = 0
	}
	rho := t.rho()
	t.rhoPushed = rho
	t.line = 0
	if t.silent >= pauseFrames && mic > 0 && mic > noise*t.aboveK {
		y := 10 * math.Log10(mic)
		if !t.in {
			t.in, t.free, t.minY = true, t.silent == pauseFrames, y
			t.k, t.lineOn, t.over = 0, t.free, 0
			t.l0, t.l1, t.l2, t.ly, t.lxy = 0, 0, 0, 0, 0
		}
		if y > t.minY+riseDB && t.free {
			t.free = false // something else in the pause: the user, a knock
			if t.m < riseWindow {
				t.m = 0 // ... from its start: no decay to learn from
			}
		}
		t.minY = min(t.minY, y)
		if t.lineOn {
			// The mic holds nothing but the late reverberation once the
			// far end has been silent for the lag, falling along this
			// decay's own recent line, until two frames in a row rise
			// riseDB over it.
			x := float64(t.k)
			over := false
			if yl, ok := t.lineAt(x); ok && t.silent >= t.lag {
				t.line = math.Pow(10, yl/10)
				over = y > yl+riseDB
			}
			switch {
			case !over:
				t.over = 0
				t.l0, t.l1, t.l2 = t.l0*lineForget+1, t.l1*lineForget+x, t.l2*lineForget+x*x
				t.ly, t.lxy = t.ly*lineForget+y, t.lxy*lineForget+x*y
			case t.over > 0:
				// Two frames in a row: a rise, not a tail's scatter.
				t.lineOn, t.line = false, 0
			default:
				t.over++ // one frame over: left out of the line
			}
		}
		t.k++
		if t.free {
			x := float64(t.m)
			t.m++
			t.sx, t.sy, t.sxy, t.sxx = t.sx+x, t.sy+y, t.sxy+x*y, t.sxx+x*x
			if t.s > 0 && t.own >= readySpread {
				t.level.Push(y - 10*math.Log10(t.s))
			}
		}
	} else if t.in {
		t.in = false
		if b, ok := t.pauseSlope(); ok {
			m := float64(t.m)
			cxx := t.sxx - t.sx*t.sx/m
			t.cxy = t.cxy*pauseForget + b*cxx
			t.cxx = t.cxx*pauseForget + cxx
			t.own = t.own*pauseForget + cxx
		}
		t.m, t.sx, t.sy, t.sxy, t.sxx = 0, 0, 0, 0, 0
	}
	t.s = rho*t.s + far
	t.hist[t.pos] = t.s
	t.pos++
	if t.pos == len(t.hist) {
		t.pos = 0
	}
	return t.beyond(t.lag)
}

// Beyond returns the predicted energy of the reverberation beyond lagMS
// (rounded down to frames, at least one frame, at most the Tail's own lag)
// in the frame last pushed: A·ρ^j·S(t−j). Beyond the Tail's lag it is what
// Push returned. A canceller whose own filter is shorter than the lag
// leaves the echo beyond its filter, which is more: WebRTC's AEC2 (128
// ms) beside a 256 ms linear filter. 0 until the room is learnt (or
// assumed). It does not allocate.
func (t *Tail) Beyond(lagMS int) float64 {
	return t.beyond(min(max(lagMS/FrameMS, 1), t.lag))
}

// beyond is Beyond for 1 <= j <= lag frames: S(t−j) is hist's entry j
// before the newest (pos is one past it; at j = lag, pos itself).
func (t *Tail) beyond(j int) float64 {
	lv, ok := t.levelDB()
	if !ok {
		return 0
	}
	n := len(t.hist)
	return math.Pow(10, lv/10) * math.Pow(t.rhoPushed, float64(j)) * t.hist[(t.pos-1-j+n)%n]
}

// FreeDecay returns the energy the room's free decay alone puts in the
// frame last pushed: once the far end has been silent for the lag, the
// line through the pause's recent frames (a least-squares line, each
// frame weighted lineForget^age), continued to this one, while it falls
// at a room's rate and no two frames in a row have risen riseDB over it
// since the pause began (one such frame is left out of the line: a
// tail's frames scatter by a few dB); 0 otherwise. There the mic holds
// nothing but the late reverberation, whatever the model: one not yet as
// long as the room's
// (the assumed 0.3 s room, a decay learnt from the first short pauses)
// predicted 4-9 dB under the mic half a second after the reply in a 1.0 s
// room, and the tail started utterances. The user answering rises over
// the line and ends it. (The line is the model's free decay, but not its
// rule for learning, a rise over the pause's lowest frame, which a tail's
// scatter reaches within a few hundred ms.)
func (t *Tail) FreeDecay() float64 { return t.line }

// lineAt is the current pause's recent line at frame x, and whether it is
// one: minPause frames at least, falling at a room's rate.
func (t *Tail) lineAt(x float64) (float64, bool) {
	if t.k < minPause {
		return 0, false
	}
	d := t.l0*t.l2 - t.l1*t.l1
	if d <= 0 {
		return 0, false
	}
	b := (t.l0*t.lxy - t.l1*t.ly) / d
	if !(b >= steepestDB && b <= flattestDB) {
		return 0, false
	}
	return t.ly/t.l0 + b*(x-t.l1/t.l0), true
}

// pauseSlope is the current pause's free decay so far: its line's slope
// (dB per frame), and whether it is one to learn from (minPause frames at
// least, at a room's rate).
func (t *Tail) pauseSlope() (float64, bool) {
	if t.m < minPause {
		return 0, false
	}
	m := float64(t.m)
	b := (t.sxy - t.sx*t.sy/m) / (t.sxx - t.sx*t.sx/m)
	return b, b >= steepestDB && b <= flattestDB
}

func (t *Tail) decayReady() bool { return t.cxx >= readySpread }

// decayDB is the learnt decay (dB per frame, negative).
func (t *Tail) decayDB() float64 { return t.cxy / t.cxx }

// rho is the learnt per-frame energy decay, 0 before it is known.
func (t *Tail) rho() float64 {
	if !t.decayReady() {
		return 0
	}
	return math.Pow(10, t.decayDB()/10)
}

// RT60 is the learnt reverberation time, 0 while unknown (also while a
// Tail predicts from an assumed model only: Assume).
func (t *Tail) RT60() float64 {
	if t.own == 0 || !t.decayReady() {
		return 0
	}
	return 60 / -t.decayDB() * FrameMS / 1000
}

// Ready reports whether Push predicts (the room is learnt, restored or
// assumed).
func (t *Tail) Ready() bool { _, ok := t.levelDB(); return ok }

// levelDB is the level A in use: the learnt one, or until it is known the
// assumed one (Assume).
func (t *Tail) levelDB() (float64, bool) {
	if t.level.Ready() {
		return t.level.Value(), true
	}
	return t.assumedDB + t.pathDB, t.assumed
}

// EchoPath tells the Tail the echo path's energy gain (the mic's echo
// over the far end handed to the speaker, dB) as the canceller has learnt
// it. An assumed level (Assume) is a 0 dB path's and moves with the path
// until the room gives its own: a room's late reverberation is as much
// louder as the speaker is. A learnt or restored level does not move.
// A gain beyond ±MaxLevelDB is taken at that limit. It does not allocate.
func (t *Tail) EchoPath(gainDB float64) {
	if math.IsNaN(gainDB) {
		return
	}
	t.pathDB = max(min(gainDB, MaxLevelDB), -MaxLevelDB)
}

// Model is what a Tail has learnt of a room, to keep across restarts (a
// robot's speaker, mic and room change rarely; learning them again takes
// the first long pauses of its first reply, and until then the tail of its
// own voice in a reverberant room is not told from a user's).
type Model struct {
	// RT60 is the reverberation time, s.
	RT60 float64 `json:"rt60_s"`
	// LevelDB is the late reverberation's level: the mic's energy in a
	// pause over the decayed sum of the far end's (A, dB).
	LevelDB float64 `json:"level_db"`
}

// Model limits: a restored model outside them is refused (ErrModel).
const (
	MinRT60 = -60.0 / steepestDB * FrameMS / 1000 // 0.1 s
	MaxRT60 = -60.0 / flattestDB * FrameMS / 1000 // 6 s
	// MaxLevelDB bounds LevelDB's magnitude.
	MaxLevelDB = 60.0
)

// ErrModel reports a model outside the limits.
var ErrModel = errors.New("reverb: model out of range")

// Check returns ErrModel, naming the value, for a model outside the
// limits.
func (m Model) Check() error {
	switch {
	case !(m.RT60 >= MinRT60 && m.RT60 <= MaxRT60):
		return fmt.Errorf("%w: rt60_s %v not in [%.1f, %.0f]", ErrModel, m.RT60, MinRT60, MaxRT60)
	case !(math.Abs(m.LevelDB) <= MaxLevelDB):
		return fmt.Errorf("%w: level_db %v not in [-%.0f, %.0f]", ErrModel, m.LevelDB, MaxLevelDB, MaxLevelDB)
	}
	return nil
}

// priorSpread is the weight of a restored decay, in the pooled pauses'
// spread (Σ(x−x̄)², frames²): readySpread, as little as makes the model
// ready. One free decay of 300 ms in the room the robot is in now has
// about 2 000, so the first long pause outweighs a model from another room.
const priorSpread = readySpread

// Model returns the learnt model, and false until the room is learnt
// (Ready, and a pause of this room learnt from or a model restored: an
// assumed model is not kept).
func (t *Tail) Model() (Model, bool) {
	if t.own == 0 || !t.level.Ready() || !t.decayReady() {
		return Model{}, false
	}
	return Model{RT60: t.RT60(), LevelDB: t.level.Value()}, true
}

// Restore starts a new Tail from a model learnt before (Model): it
// predicts at once, and learns on from the room's pauses as usual. Call
// it before the first Push. A model outside the limits is refused.
func (t *Tail) Restore(m Model) error {
	if err := t.Assume(m); err != nil {
		return err
	}
	// The decay and the level are this room's: the level starts from it
	// and learns on from the first pause frame.
	for range startFrames {
		t.level.Push(m.LevelDB)
	}
	t.own = priorSpread
	return nil
}

// Typical is the room a Tail may assume until it has learnt its own
// (Assume): a small furnished room, RT60 0.3 s, its level that of a 0 dB
// echo path (the mic's echo as loud as the far end; EchoPath moves it with
// the path). Both are what a Tail learns in duplex-bench's default room,
// median of 8 seeds: RT60 0.28 s, level 1.8 dB over the echo path's gain.
// Assumed, it shortens the wait for the room's first long pauses: in a
// quiet reverberant room, the tail of the robot's first replies was not
// told from a user's until then (docs/benchmarks.md, "A typical room
// assumed at the first start", "The assumed room follows the echo path,
// and the tail its own free decay").
func Typical() Model { return Model{RT60: 0.3, LevelDB: 1.8} }

// Assume starts a new Tail from a model it has not learnt (Typical): it
// predicts with it at once and learns on from the room's pauses as usual.
// The assumed decay weighs as little as a restored one, so the room's
// first long pause outweighs it. The assumed level stands in until the
// room has shown a decay of its own (pauses whose spread alone would make
// a new Tail's decay known); from then on the pause frames give the level,
// from their exact median as in a new Tail. The assumed level is a 0 dB
// echo path's: it moves with the path the canceller learns (EchoPath). A
// level learnt against the assumed decay is biased by it (in a 0.8 s room
// the 0.3 s decay's sum of the far end falls faster than the mic in a
// pause, so the level came out too high, and at SER −10 dB the guard held
// 14 more of 32 users: docs/benchmarks.md, "A typical room assumed at the
// first start"). Unlike Restore, the assumed model is not reported as
// learnt (Model, RT60) until the room has taught the Tail something. Call
// it before the first Push. A model outside the limits is refused.
func (t *Tail) Assume(m Model) error {
	if err := m.Check(); err != nil {
		return err
	}
	decay := -60 / (m.RT60 * 1000 / FrameMS) // dB per frame
	t.cxx, t.cxy, t.own = priorSpread, decay*priorSpread, 0
	t.level = quantile.NewStarted(0.5, levelStepDB, startFrames)
	t.assumedDB, t.pathDB, t.assumed = m.LevelDB, 0, true
	return nil
}
