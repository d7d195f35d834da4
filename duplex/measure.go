package duplex

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// EchoPath is the echo path found between what was played and what the mic
// recorded.
type EchoPath struct {
	Delay  time.Duration // recorded lags played by this much
	GainDB float64       // level of the echo relative to what was played (-ERL)
	Corr   float64       // normalised correlation at Delay (how linear / clean the path is)
	// RT60 is the room's reverberation time measured on the recording's
	// decay after the played signal stops (MeasureDecay); 0 when not
	// measured (no silence after the played signal, or too little decay
	// above the recording's noise floor).
	RT60 time.Duration
}

func (e EchoPath) String() string {
	s := fmt.Sprintf("delay %v, echo gain %.1f dB (ERL %.1f dB), correlation %.2f", e.Delay.Round(100*time.Microsecond), e.GainDB, -e.GainDB, e.Corr)
	if e.RT60 > 0 {
		s += fmt.Sprintf(", RT60 %.2f s", e.RT60.Seconds())
	}
	return s
}

// MeasureEcho finds the delay (0..maxDelay) at which recorded best matches
// played (both mono at rate), and the echo's gain there. The delay includes
// the devices' buffers: it is what a recording made by the same programs
// sees. For a usable figure play a few seconds of broadband noise.
func MeasureEcho(played, recorded []int16, rate int, maxDelay time.Duration) (EchoPath, error) {
	maxLag := int(maxDelay.Seconds() * float64(rate))
	n := len(played)
	if n < rate/2 || len(recorded) < n {
		return EchoPath{}, fmt.Errorf("duplex: measure echo: need at least 0.5 s played and a recording as long (have %d and %d samples)", len(played), len(recorded))
	}
	if len(recorded) < n+maxLag {
		maxLag = len(recorded) - n
	}
	x := make([]float64, n)
	var ex float64
	for i, v := range played {
		x[i] = float64(v)
		ex += x[i] * x[i]
	}
	if ex == 0 {
		return EchoPath{}, fmt.Errorf("duplex: measure echo: the played signal is silent")
	}
	best, bestLag := -2.0, 0
	var bestC, bestE float64
	for lag := 0; lag <= maxLag; lag++ {
		var c, ey float64
		r := recorded[lag : lag+n]
		for i, v := range r {
			y := float64(v)
			c += x[i] * y
			ey += y * y
		}
		if ey == 0 {
			continue
		}
		if nc := c / math.Sqrt(ex*ey); nc > best {
			best, bestLag, bestC, bestE = nc, lag, c, ey
		}
	}
	if best <= -2 {
		return EchoPath{}, fmt.Errorf("duplex: measure echo: the recording is silent")
	}
	_ = bestE
	// Least-squares gain of the direct path, as energy: the echo component
	// correlated with the played signal.
	g := bestC / ex
	e := EchoPath{Delay: time.Duration(bestLag) * time.Second / time.Duration(rate), GainDB: 20 * math.Log10(math.Abs(g)+1e-12), Corr: best}
	e.RT60, _ = MeasureDecay(played, recorded, rate, bestLag)
	return e, nil
}

// Decay measurement (MeasureDecay): 10 ms energy frames, smoothed over
// decaySmooth frames; the steady level is the mean over the 250 ms before
// the played signal stops; the decay is fitted between decayStartDB and
// decayEndDB below it (ISO 3382-2's T20 range), or between decayStartDB
// and 10 dB above the recording's noise floor when that is higher, at
// least decayMinRangeDB.
const (
	decayFrameMS    = 10
	decaySmooth     = 3
	decaySteadyMS   = 250
	decayStartDB    = -5
	decayEndDB      = -25
	decayMinRangeDB = 15
	decayFloorDB    = 10 // the fit ends this far above the noise floor
	decayMinSilence = 300 * time.Millisecond
)

// ErrNoDecay: MeasureDecay found no decay to measure.
var ErrNoDecay = errors.New("duplex: measure decay: no decay to measure")

// MeasureDecay estimates the room's reverberation time from the recording
// of a broadband signal that stops (the interrupted-noise method of ISO
// 3382-2): played ends in at least 300 ms of silence, and recorded lags it
// by lag samples (MeasureEcho's delay). The level of the recording after
// the signal stops falls in dB along a line; its slope, fitted by least
// squares from 5 dB to 25 dB below the steady level (or to 10 dB above the
// recording's noise floor, at least 15 dB of range), extrapolated to 60 dB
// is the RT60. The direct sound stops at once and is left out by the
// 5 dB start. One decay of noise fluctuates: a figure to ±20 % or so,
// enough to choose a filter length. ErrNoDecay when played does not end
// in silence or the recording's floor leaves less than 15 dB of decay.
func MeasureDecay(played, recorded []int16, rate, lag int) (time.Duration, error) {
	var peak int
	for _, v := range played {
		peak = max(peak, abs16(v))
	}
	last := -1
	for i := len(played) - 1; i >= 0; i-- {
		if abs16(played[i]) > peak/100 {
			last = i
			break
		}
	}
	fl := rate * decayFrameMS / 1000
	stop := last + 1 + lag
	steady := rate * decaySteadyMS / 1000
	silence := len(played) - last - 1
	if peak == 0 || fl == 0 || time.Duration(silence)*time.Second/time.Duration(rate) < decayMinSilence || stop-steady < 0 || stop+silence > len(recorded) {
		return 0, ErrNoDecay
	}
	level := func(from int) float64 { // smoothed frame energy starting at from
		var e float64
		for _, v := range recorded[from : from+decaySmooth*fl] {
			e += float64(v) * float64(v)
		}
		return e/float64(decaySmooth*fl) + 1e-9
	}
	var ref float64
	for k := stop - steady; k < stop; k++ {
		ref += float64(recorded[k]) * float64(recorded[k])
	}
	ref /= float64(steady)
	if ref < 1 {
		return 0, ErrNoDecay
	}
	var db []float64 // level after the stop, dB re the steady level, per frame
	for k := stop; k+decaySmooth*fl <= stop+silence; k += fl {
		db = append(db, 10*math.Log10(level(k)/ref))
	}
	if len(db) < 10 {
		return 0, ErrNoDecay
	}
	var fe float64 // the noise floor: the mean level over the last quarter
	for _, v := range db[len(db)*3/4:] {
		fe += math.Pow(10, v/10)
	}
	floor := 10 * math.Log10(fe/float64(len(db)-len(db)*3/4))
	end := max(decayEndDB, floor+decayFloorDB)
	if end > decayStartDB-decayMinRangeDB {
		return 0, ErrNoDecay
	}
	started := false // the fit starts at the first frame decayStartDB down
	var sx, sy, sxx, sxy, n float64
	for i, v := range db {
		if !started && v > decayStartDB {
			continue
		}
		started = true
		if v < end {
			break
		}
		x := float64(i)
		sx, sy, sxx, sxy, n = sx+x, sy+v, sxx+x*x, sxy+x*v, n+1
	}
	if n < 3 {
		return 0, ErrNoDecay
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx) // dB per frame
	if slope >= 0 {
		return 0, ErrNoDecay
	}
	return time.Duration(-60 / slope * decayFrameMS * float64(time.Millisecond)), nil
}

func abs16(v int16) int {
	if v < 0 {
		return -int(v)
	}
	return int(v)
}
