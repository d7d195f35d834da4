package jittertrace

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Counters are a playout's cumulative counts, in samples unless noted.
type Counters struct {
	Source    int64 // source samples played (the stream position)
	Concealed int64 // output samples of concealment (underrun fades/silence)
	Stretched int64 // samples removed or inserted by time-stretching
	Lost      int64 // samples dropped (overflow)
	Underruns int64 // underrun events
	Peak      int64 // deepest buffer
}

// Playout is a jitter buffer under test. The replay calls it from one
// goroutine; now is the simulated time of the call (non-decreasing).
type Playout interface {
	Push(now time.Duration, pcm []int16)
	End(now time.Duration) // the stream's last frame has been pushed
	Fill(now time.Duration, dst []int16)
	Counters() Counters
}

// Options of a replay.
type Options struct {
	// PeriodFrames is the device period (default 240 = 10 ms).
	PeriodFrames int
	// Audio is the stream content, looped (default: Speech(0)).
	Audio []int16
	// Out, if set, receives every period handed to the device.
	Out func([]int16) error
}

// Result is what a listener got from one replay.
type Result struct {
	Frames, Samples int64
	Played          int64 // frames whose first sample was played
	// Added delay: time from a frame's arrival to its first sample
	// reaching the device, percentiles over frames.
	P50, P95, P99 time.Duration
	ConcealedPct  float64 // concealment output / stream samples
	StretchedPct  float64 // samples removed or inserted / stream samples
	Growth        time.Duration
	Lost          int64
	Underruns     int64
	Peak          int64 // deepest buffer, samples
	Duration      time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("delay p50 %v p95 %v p99 %v, concealed %.2f%%, stretched %.2f%%, growth %v, lost %d samples, %d underruns, peak %.1f s",
		r.P50.Round(time.Millisecond), r.P95.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.ConcealedPct, r.StretchedPct,
		r.Growth.Round(time.Millisecond), r.Lost, r.Underruns, float64(r.Peak)/SampleRate)
}

// Replay pushes frames into p at their arrival times and fills the device
// every period until everything pushed has been played (or lost), then
// measures. The clock starts at the first arrival rounded down to a period.
func Replay(frames []Frame, p Playout, opt Options) (Result, error) {
	if len(frames) == 0 {
		return Result{}, fmt.Errorf("jittertrace: replay: no frames")
	}
	if opt.PeriodFrames == 0 {
		opt.PeriodFrames = 240
	}
	if opt.Audio == nil {
		opt.Audio = Speech(0, 30*SampleRate)
	}
	period := time.Duration(opt.PeriodFrames) * time.Second / SampleRate
	starts := make([]int64, len(frames)+1)
	arr := make([]time.Duration, len(frames))
	var prev time.Duration
	for i, f := range frames {
		starts[i+1] = starts[i] + int64(f.Samples)
		prev = max(prev, f.Arrival)
		arr[i] = prev
	}
	total := starts[len(frames)]
	play := make([]time.Duration, len(frames))
	for i := range play {
		play[i] = -1
	}
	buf := make([]int16, 0, MaxFrameSamples)
	dst := make([]int16, opt.PeriodFrames)
	audioPos := 0
	t := arr[0] / period * period
	next, played := 0, 0 // next frame to push, frames whose start played
	limit := arr[len(arr)-1] + time.Duration(total)*time.Second/SampleRate + time.Minute
	var src0 int64
	for ; t <= limit; t += period {
		for next < len(frames) && arr[next] <= t {
			buf = buf[:0]
			for range frames[next].Samples {
				buf = append(buf, opt.Audio[audioPos])
				audioPos = (audioPos + 1) % len(opt.Audio)
			}
			p.Push(arr[next], buf)
			next++
			if next == len(frames) {
				p.End(arr[next-1])
			}
		}
		p.Fill(t, dst)
		if opt.Out != nil {
			if err := opt.Out(dst); err != nil {
				return Result{}, err
			}
		}
		c := p.Counters()
		src1 := c.Source
		for played < len(frames) && starts[played] < src1 {
			frac := float64(starts[played]-src0) / float64(max(src1-src0, 1))
			play[played] = t + time.Duration(max(frac, 0)*float64(period))
			played++
		}
		src0 = src1
		if next == len(frames) && (src1 >= total || src1+c.Lost >= total) {
			break
		}
	}
	c := p.Counters()
	res := Result{
		Frames: int64(len(frames)), Samples: total, Played: int64(played),
		ConcealedPct: 100 * float64(c.Concealed) / float64(total),
		StretchedPct: 100 * float64(c.Stretched) / float64(total),
		Lost:         c.Lost, Underruns: c.Underruns, Peak: c.Peak,
		Duration: arr[len(arr)-1] - arr[0],
	}
	var all, first, last []float64
	win := min(time.Minute, res.Duration/3)
	for i := range frames {
		if play[i] < 0 {
			continue
		}
		if play[i] < arr[i] {
			continue // a fixed buffer skipped this late frame
		}
		d := float64(play[i] - arr[i])
		all = append(all, d)
		if arr[i]-arr[0] < win {
			first = append(first, d)
		}
		if arr[len(arr)-1]-arr[i] < win {
			last = append(last, d)
		}
	}
	res.P50, res.P95, res.P99 = pct(all, 50), pct(all, 95), pct(all, 99)
	res.Growth = pct(last, 50) - pct(first, 50)
	return res, nil
}

// pct is the nearest-rank percentile of v (sorted in place).
func pct(v []float64, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(float64(len(v))*p/100)) - 1
	return time.Duration(v[min(max(i, 0), len(v)-1)])
}

// Speech returns n samples of deterministic speech-like audio at 24 kHz:
// voiced syllables (a glottal-like pulse train with a gliding 100..220 Hz
// fundamental shaped by two formant resonators, 4 Hz syllable envelope)
// separated by short pauses, with a low noise floor. seed varies it.
func Speech(seed uint64, n int) []int16 {
	rng := newRand(seed)
	out := make([]int16, n)
	var phase, y1, y2, z1, z2 float64
	f0 := 140.0
	segLeft, voiced := 0, true
	for i := range out {
		if segLeft == 0 {
			voiced = !voiced || rng.Float64() < 0.2
			if voiced {
				segLeft = int((0.3 + 0.9*rng.Float64()) * SampleRate)
				f0 = 100 + 120*rng.Float64()
			} else {
				segLeft = int((0.08 + 0.3*rng.Float64()) * SampleRate)
			}
		}
		segLeft--
		t := float64(i) / SampleRate
		f := f0 * (1 + 0.08*math.Sin(2*math.Pi*0.7*t))
		phase += f / SampleRate
		exc := 0.0
		if phase >= 1 {
			phase -= 1
			exc = 1
		}
		env := 0.0
		if voiced {
			env = 0.55 + 0.45*math.Sin(2*math.Pi*4*t)
		}
		// Two resonators (formants near 600 Hz and 1600 Hz).
		y := exc*env + 1.85*math.Cos(2*math.Pi*600/SampleRate)*0.975*y1 - 0.975*0.975*y2
		y2, y1 = y1, y
		z := y + 1.9*math.Cos(2*math.Pi*1600/SampleRate)*0.96*z1 - 0.96*0.96*z2
		z2, z1 = z1, z
		v := 900*z + 30*rng.NormFloat64()
		out[i] = int16(max(-32768, min(32767, v)))
	}
	return out
}
