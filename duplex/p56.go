package duplex

import "math"

// ITU-T P.56 (12/2011) method B constants: envelope time constant, hangover
// and margin.
const (
	p56TimeConst = 0.03 // s
	p56Hangover  = 0.2  // s
	p56MarginDB  = 15.9
	p56Thresh    = 15 // thresholds 2^-15 .. 2^-1 of full scale (16-bit PCM)
)

// P56 measures s (mono PCM16 at rate Hz) by ITU-T P.56 method B: the
// rectified signal goes through two first-order smoothers of 30 ms time
// constant (the envelope); a sample is active when the envelope is at or
// above a threshold, or less than 200 ms after one that was (the
// hangover). The active speech level is the RMS over the active samples
// at the threshold that lies 15.9 dB below that level (found among the
// thresholds 2^-15..2^-1 of full scale and interpolated linearly in dB
// between two, as the ITU-T G.191 tool sv56 does). It returns the level in
// dBFS (RMS re full scale, as ActiveLevel) and the activity of every sample at that threshold; a signal without any
// active sample gives -Inf and all false.
func P56(s []int16, rate int) (level float64, active []bool) {
	active = make([]bool, len(s))
	g := math.Exp(-1 / (p56TimeConst * float64(rate)))
	hang := int(math.Round(p56Hangover * float64(rate)))
	var c [p56Thresh]float64
	for j := range c {
		c[j] = math.Pow(2, float64(j-p56Thresh)) // of full scale
	}
	var count [p56Thresh]int
	var since [p56Thresh]int
	for j := range since {
		since[j] = hang // no hangover before the first active sample
	}
	var sq, p, q float64
	for _, v := range s {
		x := float64(v) / 32768
		sq += x * x
		p = g*p + (1-g)*math.Abs(x)
		q = g*q + (1-g)*p
		for j := range c {
			switch {
			case q >= c[j]:
				count[j]++
				since[j] = 0
			case since[j] < hang:
				count[j]++
				since[j]++
			}
		}
	}
	// A[j] − C[j] falls as the threshold rises; find where it crosses the
	// margin.
	diff := func(j int) (a, d float64) {
		if count[j] == 0 {
			return math.Inf(-1), math.Inf(-1)
		}
		a = 10 * math.Log10(sq/float64(count[j]))
		return a, a - 20*math.Log10(c[j])
	}
	level = math.Inf(-1)
	a0, d0 := diff(0)
	if math.IsInf(a0, -1) {
		return level, active
	}
	if d0 <= p56MarginDB {
		level = a0 // the signal is loud for all thresholds' resolution
	} else {
		for j := 1; j < p56Thresh; j++ {
			a1, d1 := diff(j)
			if d1 <= p56MarginDB {
				if math.IsInf(a1, -1) {
					level = a0
				} else {
					level = a0 + (a1-a0)*(d0-p56MarginDB)/(d0-d1)
				}
				break
			}
			a0, d0 = a1, d1
		}
		if math.IsInf(level, -1) {
			level = a0
		}
	}
	// Activity at the threshold 15.9 dB below the level.
	th := math.Pow(10, (level-p56MarginDB)/20)
	p, q = 0, 0
	since0 := hang
	for i, v := range s {
		x := float64(v) / 32768
		p = g*p + (1-g)*math.Abs(x)
		q = g*q + (1-g)*p
		switch {
		case q >= th:
			active[i] = true
			since0 = 0
		case since0 < hang:
			active[i] = true
			since0++
		}
	}
	return level, active
}

// LabelsP56 marks each 20 ms frame of clean speech s (16 kHz) in which
// more than half the samples are active by ITU-T P.56 method B (P56:
// threshold 15.9 dB below the active level, envelope time constant 30 ms,
// hangover 200 ms). Unlike LabelsActive it counts the pauses of less than
// 200 ms between words and 200 ms after each phrase as speech, as the
// standard does.
func LabelsP56(s []int16) []bool {
	_, act := P56(s, NearRate)
	out := make([]bool, (len(s)+micFrame-1)/micFrame)
	for k := range out {
		n, on := 0, 0
		for _, a := range act[k*micFrame : min((k+1)*micFrame, len(s))] {
			n++
			if a {
				on++
			}
		}
		out[k] = 2*on > n
	}
	return out
}
