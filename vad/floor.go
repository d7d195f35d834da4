package vad

// Floor is the energy detector's adaptive noise floor (a frame's level in
// dBFS): outside utterances it drops at once to any quieter frame and
// rises by a fixed step per frame otherwise, so it sits at the quietest
// frames of the background and a frame StartDB above it is speech. The
// capture pump's built-in detector and Energy both use it.
//
// A dip shorter than dipMS does not move it. A mic or a link that loses
// audio for a moment delivers digital silence (a USB hiccup, a device
// restart, a recording's silent first frames looped by a simulation), and
// the floor followed it down at once: the room's own noise coming back
// after the gap stood 30–60 dB over the floor, was speech, and, at a rise
// of 1 dB/s, stayed speech for tens of seconds (measured in full duplex:
// pink noise at SNR 10 dB with 40 ms of zeros once a minute, 7 false
// barge-ins in 30 replies, 0 without the gap; a recorded exercise bike at
// 5 dB whose file starts with 40 ms of zeros, 22 in 100; docs/benchmarks.md
// "Recorded noises"). So when the floor has fallen dipDB or more within
// the last dipMS and a frame's level is back within dipBackDB of where the
// floor was before the fall, the floor returns there before the frame is
// judged. A room that really gets quieter (a motor that stops) stays
// quieter, and after dipMS the floor keeps its new level.
//
// Not safe for concurrent use: one goroutine (the detector's or the
// pump's). It does not allocate.
type Floor struct {
	level, rise float64
	init        bool
	// hist holds the floor before each of the last size frames (Follow
	// or Hold), a ring; n of them are set.
	hist          [maxDipFrames]float64
	n, next, size int
}

const (
	// dipDB is how far the floor must fall within dipMS for the fall to
	// be provisional: more than any frame-to-frame swing of a steady
	// background's level (a few dB per 20 ms frame, up to 10 in a
	// recorded fan or bike), less than a dropout's 20–60 dB.
	dipDB = 15.0
	// dipBackDB: a frame within this of the floor before the fall is the
	// background back (a steady noise's quietest frames lie within 3–6 dB
	// of its typical ones).
	dipBackDB = 6.0
	// dipMS is the longest dip the floor ignores.
	dipMS        = 300
	maxDipFrames = dipMS / 10
)

// NewFloor returns a floor rising riseDBPerS for frames of frameMS.
func NewFloor(riseDBPerS float64, frameMS int) Floor {
	frameMS = max(frameMS, 10)
	return Floor{rise: riseDBPerS * float64(frameMS) / 1000, size: max(1, min(maxDipFrames, dipMS/frameMS))}
}

// Judge returns the floor to judge a frame of level db against. The first
// frame sets it; a frame that ends a dip (see Floor) restores it.
func (f *Floor) Judge(db float64) float64 {
	if !f.init {
		f.level, f.init = db, true
		return f.level
	}
	if f.n > 0 {
		top := f.hist[0]
		for _, v := range f.hist[1:f.n] {
			top = max(top, v)
		}
		if top-f.level >= dipDB && db >= top-dipBackDB {
			f.level = top
		}
	}
	return f.level
}

// Follow moves the floor with a frame judged outside an utterance: down at
// once to a quieter frame, otherwise up by the rise step (at most to the
// frame's level).
func (f *Floor) Follow(db float64) {
	f.push()
	if db < f.level {
		f.level = db
	} else {
		f.level = min(f.level+f.rise, db)
	}
}

// Hold keeps the floor for a frame it must not follow (the robot's echo,
// which a canceller's suppressor pushes under the room's noise); the frame
// still counts towards dipMS.
func (f *Floor) Hold() { f.push() }

func (f *Floor) push() {
	if !f.init {
		return
	}
	f.hist[f.next] = f.level
	f.next = (f.next + 1) % f.size
	f.n = min(f.n+1, f.size)
}
