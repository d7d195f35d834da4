package aec

import "math"

// silentSpeaker tells, from the mic alone, when the speaker plays nothing
// of what it is handed although its device says it plays: an amplifier
// that lost power, a mute switch or a cut cable. The sink cannot report
// those (hw/portaudio's Sink.Up is about the device), so the far-end
// reference still holds the robot's voice; given to the canceller with no
// echo of it in the mic, it taught the canceller that the echo path had
// gone, and the echo that came back with the amplifier passed for the user
// (duplex-bench --speaker-dropout-unreported, 2 s every 20 s, pink noise at
// SNR 10 dB: 19 false barge-ins in 50 replies). Where the reference holds
// silence instead (the Tap does that while the sink reports its device
// down) the canceller keeps its room.
//
// The evidence is the learned echo path applied to the far end at the
// echo's delay. The speaker is taken for silent after silentRunMS of reads
// in a row whose mic holds silentShortDB less than the echo the path
// predicts (over the room's noise), where that echo would be
// silentAudibleDB over the noise; or after a window of silentWindowMS of
// reads with the far end playing over which the predicted echo is
// silentAudibleDB over the noise and the mic within silentFloorDB of it.
// Speed matters: every 20 ms the canceller is given the far end without its
// echo costs about one false barge-in per 30 replies in a quiet room
// (measured with the bench's own knowledge of the speaker: from 0 when the
// far end is silenced with the speaker, 2 two reads late, 6 five reads
// late), and the canceller is given the far end a lead ahead of the echo
// (48 ms for WebRTC) before the mic can show anything. The reads with the
// mic short of the prediction, or within silentFloorDB of the noise, are
// held: a user talking cannot make the mic quieter than the echo or the
// room.
//
// While silent the caller gives the canceller, and everything that learns
// from the far end, silence as the far end; a read whose level the learned
// echo path explains (the noise plus four times the predicted echo at the
// far end's recent peak: the guards' 6 dB) is held, since the canceller
// would pass the echo of a speaker that has just come back. After
// silentTailMS (the reverberation of the last echo has faded), a read
// 6 dB over the noise that the path explains starts a trial: the canceller
// is given the far end again while a window decides. The speaker is back
// when, in a window, the mic holds at least as much again as the noise and
// that excess follows the far end: the per-read correlation of the mic's
// excess energy with the far end's is at least silentBackCorr. That test
// does not trust the learned path's gain (learnt in loud motor noise with
// a clipping mic it predicted an echo 4 dB over the one heard, and a level
// test never found the speaker back), a speaker turned down is found back
// too, and a user, whose speech does not follow the robot's, decides
// nothing. Then the canceller is given the far end again, with the
// filter it kept, the caller's disturbance guard holds what the echo path
// explains until the canceller shows its reduction, and for
// silentAfterMS what the path explains is held and the speaker is not
// taken for silent again by the reads in a row (the path is learnt anew
// after a volume change).
//
// Owned by the Source's Read goroutine.
type silentSpeaker struct {
	on       bool
	trial    bool // silent, but the canceller is given the far end while a window decides whether it is back
	episodes int  // times the speaker was taken for silent
	// The window: samples of reads with the far end playing, and their
	// mic, predicted echo and noise energies; per read (up to
	// silentMaxReads), the mic's excess power over the noise and the far
	// end's power.
	winN                      int
	winMic, winPred, winNoise float64
	k                         int
	after                     int // samples after the speaker came back in which what the echo path explains is held (silentAfterMS)
	run                       int // samples of reads in a row with the mic silentShortDB under the predicted echo (silentRunMS)
	since                     int // samples since the speaker was taken for silent
	excess, far               [silentMaxReads]float64
	// The far end's decaying peak power (per sample), with the Source's
	// half-life (farPeakHalfLife): the room's reverberation of a louder
	// word is in the mic too.
	peak float64
	// The mic's noise (energy per sample): the mean of the reads with the
	// far end silent within 2·silentFloorDB of their 10th percentile
	// (dBFS, a tracker as the Source's for its output; the output's noise
	// lies under the mic's where the canceller's suppressor takes some of
	// it out, 2–5 dB measured with WebRTC in pink noise, so it cannot tell
	// a mic that holds only the room).
	floorDB   float64
	haveFloor bool
	noise     float64
	// The echo path: the smoothed excess of the mic over the noise and
	// the far end's energy, over reads reads with the far end playing.
	gMic, gFar float64
	reads      int
}

// silentWarmupReads: reads with the far end playing before the echo path's
// gain is used.
const silentWarmupReads = 100

// silentRiseDBPerS: the learned echo path's gain (its ratio of mic excess
// to far end) rises at most this fast, and falls freely. A user talking
// over the robot adds to the mic but not to the far end; learnt at the
// pace of every read (erlSmoothing: about a second), a user 10-15 dB over
// a quiet robot's echo put the gain 10 dB over the echo, and when they
// stopped the mic's echo was short of that prediction: the speaker taken
// for silent 12-21 times in 20 replies of duplex-bench (17-39 with 9 s of
// speech, and 2 of those 20 barge-ins missed while the reads were held).
// At 2 dB/s: never, and the speaker dropouts of docs/benchmarks.md found
// as before (1 dB/s: 1-2 more false barge-ins in 30 replies in three of
// those scenes, not investigated).
const silentRiseDBPerS = 2.0

// silentLimitFrom: the first reads with the far end playing learn the
// gain freely (from its first read's value).
const silentLimitFrom = 10

// silentWindowMS: the window (reads with the far end playing).
const silentWindowMS = 200

// silentRunMS: reads in a row whose mic holds silentShortDB less than the
// predicted echo over the noise, where that is silentAudibleDB over it,
// find the speaker silent.
const silentRunMS = 40

// silentMaxReads: the most reads a window keeps for the correlation (the
// first ones of a window of shorter reads; 10 ms reads fill it).
const silentMaxReads = 32

// silentAudibleDB: the echo the learned path predicts must be this far over
// the room's noise for a read or a window to show its absence.
const silentAudibleDB = 10.0

// silentShortDB: a read whose mic holds this much less than the predicted
// echo (over the noise), where the echo would be silentAudibleDB over the
// noise, is evidence of silence, and held (a user talking over the echo
// only adds to it).
const silentShortDB = 10.0

// silentFloorDB: a mic within this of the noise holds no echo.
const silentFloorDB = 2.0

// silentBackCorr: the correlation of the mic's excess with the far end, per
// read over a window, that shows the echo back.
const silentBackCorr = 0.5

// silentTailMS: the speaker is found back no sooner than this after it was
// taken for silent: the reverberation of its last echo is still in the
// mic for a few hundred milliseconds, and follows the far end too.
const silentTailMS = 400

// silentAfterMS: after the speaker came back, what the learned echo path
// explains is held this long: the canceller was given the far end
// without its echo from when the speaker went quiet until that was found
// (the far end's lead on the echo, and two reads), and in a quiet room it
// let the echo through now and then for 0.5-2.5 s after the speaker came
// back (10 false barge-ins in 30 replies with 2 s silences every 20 s in
// a room without noise, none with this hold).
const silentAfterMS = 3000

// feedFar reports whether the canceller is given the far end in the next
// read: not while the speaker is silent.
func (d *silentSpeaker) feedFar() bool { return !d.on || d.trial }

// push takes a read of n samples: mic energy eMic, the far end's energy
// eFar (what the reference holds at the echo's delay, whether or not it
// was fed); converged: the canceller has converged (its first reply is
// over); quiet: the far end has been silent long enough for its echo
// to have gone (the noise learns from the read). It reports whether the
// caller holds the read (hold) and whether the speaker came back with it
// (back: the caller's disturbance guard starts).
func (d *silentSpeaker) push(n int, eMic, eFar float64, converged, quiet bool) (hold, back bool) {
	if quiet {
		d.learnNoise(n, eMic)
	}
	d.peak = decayPeak(d.peak, eFar, n)
	if !converged || !d.haveFloor {
		return false, false
	}
	// A room without noise (a simulation) has a floor of one LSB.
	noise := max(d.noise, 1) * float64(n)
	far := eFar > farActive*farActive*float64(n)
	if far && !d.on {
		// The echo path's gain, learnt here from every read with the far
		// end playing, the noise taken out: the Source learns its own
		// from the reads the canceller called echo, noise and all, which
		// in a loud room (pink noise at −21 dBFS, the echo a few dB over
		// it) picks the reads the echo dominated and put the path 7-10
		// dB over the echo the mic held: two reads in a row then looked
		// short of it now and then (22-39 times taken for silent in 30
		// replies without a silence).
		if d.reads == 0 {
			d.gMic, d.gFar = eMic-noise, eFar
		} else {
			prev := d.gMic / d.gFar
			d.gMic += erlSmoothing * (eMic - noise - d.gMic)
			d.gFar += erlSmoothing * (eFar - d.gFar)
			if lim := prev * dbRatio(silentRiseDBPerS*float64(n)/Rate); d.reads >= silentLimitFrom && prev > 0 && d.gMic > lim*d.gFar {
				d.gMic = lim * d.gFar
			}
		}
		d.reads = min(d.reads+1, silentWarmupReads)
	}
	if d.reads < silentWarmupReads || d.gMic <= 0 {
		return false, false
	}
	erl := d.gMic / d.gFar
	explained := eMic < noise+4*erl*d.peak*float64(n)
	after := d.after > 0
	d.after = max(d.after-n, 0)
	if d.on {
		d.since += n
	}
	if !far {
		// A pause of the far end: no evidence, but the echo of its
		// last words may still be in the mic.
		return (d.on || after) && explained, false
	}
	pred := erl * eFar
	d.add(n, eMic, eFar, pred, noise)
	full := d.winN >= silentWindowMS*Rate/1000
	if !d.on {
		short := !after && pred >= noise*dbRatio(silentAudibleDB) && eMic-noise < pred/dbRatio(silentShortDB)
		if short {
			d.run += n
		} else {
			d.run = 0
		}
		run := d.run >= silentRunMS*Rate/1000
		if full || run {
			if run || d.winPred >= d.winNoise*dbRatio(silentAudibleDB) && d.winMic < d.winNoise*dbRatio(silentFloorDB) {
				d.on, d.since, d.trial = true, 0, false
				d.episodes++
			}
			d.resetWindow()
			d.run = 0
		}
		return short || after && explained || eMic < noise*dbRatio(silentFloorDB), false
	}
	settled := d.since >= silentTailMS*Rate/1000
	if !d.trial && settled && eMic >= 4*noise && explained {
		// Something the echo path explains, 6 dB over the noise: the
		// canceller is given the far end from the next read while a
		// window from this read decides.
		d.trial = true
		d.resetWindow()
		d.add(n, eMic, eFar, pred, noise)
		return true, false
	}
	if full {
		if ex := d.winMic - d.winNoise; settled && ex >= d.winNoise && correlation(d.excess[:d.k], d.far[:d.k]) >= silentBackCorr {
			d.on, back = false, true
			d.after = silentAfterMS * Rate / 1000
		}
		d.trial = false
		d.resetWindow()
	}
	return explained, back
}

// add takes a read of n samples with the far end playing into the window:
// mic, far-end, predicted echo and noise energies.
func (d *silentSpeaker) add(n int, eMic, eFar, pred, noise float64) {
	d.winN += n
	d.winMic += eMic
	d.winPred += pred
	d.winNoise += noise
	if d.k < silentMaxReads {
		d.excess[d.k], d.far[d.k] = (eMic-noise)/float64(n), eFar/float64(n)
		d.k++
	}
}

func (d *silentSpeaker) resetWindow() {
	d.winN, d.winMic, d.winPred, d.winNoise, d.k = 0, 0, 0, 0, 0
}

// correlation is the Pearson correlation of x and y (equal lengths); 0
// when either is constant.
func correlation(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx <= 0 || syy <= 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// learnNoise takes a read of n samples with the far end silent.
func (d *silentSpeaker) learnNoise(n int, eMic float64) {
	db := 10*math.Log10(eMic/float64(n)+1e-3) - fullScaleDB
	trackFloor(&d.floorDB, &d.haveFloor, db, n)
	if db < d.floorDB+silentFloorDB*2 {
		trackMean(&d.noise, eMic/float64(n), n)
	}
}

// dbRatio is an energy ratio of db decibels.
func dbRatio(db float64) float64 { return math.Pow(10, db/10) }
