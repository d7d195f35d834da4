package duplex

import (
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
}

func (e EchoPath) String() string {
	return fmt.Sprintf("delay %v, echo gain %.1f dB (ERL %.1f dB), correlation %.2f", e.Delay.Round(100*time.Microsecond), e.GainDB, -e.GainDB, e.Corr)
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
	return EchoPath{Delay: time.Duration(bestLag) * time.Second / time.Duration(rate), GainDB: 20 * math.Log10(math.Abs(g)+1e-12), Corr: best}, nil
}
