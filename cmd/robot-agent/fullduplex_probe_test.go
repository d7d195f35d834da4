//go:build portaudio && webrtcapm && cgo

package main

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// The echo-path probe of the full-duplex test: it places what the speaker
// played and what the mic captured on the agent clock exactly as the echo
// canceller's Tap and Source do (the device-clock latencies), and finds by
// envelope cross-correlation over a wide range of lags (negative too) the
// residual delay the canceller's delay estimator has to find. The test logs
// it beside the estimator's value, so a failure shows whether the
// alignment or the canceller was at fault.

// envBin is the envelope step of the probe.
const envBin = 2 * time.Millisecond

// envTimeline is a mean-|x| envelope on the agent clock.
type envTimeline struct {
	mu      sync.Mutex
	t0      time.Duration
	sum     []float64
	cnt     []int32
	lat     []time.Duration // device latencies seen (for min/max)
	blocks  int
	maxBins int
	// Disagreements of a block's timestamp with the end of the previous
	// block (what the canceller's running sample counts see): how many
	// exceeded 40 ms, and the largest each way.
	next              time.Duration
	over40            int
	maxEarly, maxLate time.Duration
	offs              []string // the first disagreements over 20 ms: "when:by"
}

func newEnvTimeline(t0 time.Duration, d time.Duration) *envTimeline {
	n := int(d / envBin)
	return &envTimeline{t0: t0, sum: make([]float64, n), cnt: make([]int32, n), maxBins: n}
}

// add places p (rate Hz), whose first sample is at start.
func (e *envTimeline) add(p []int16, start time.Duration, rate int, lat time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.blocks > 0 {
		d := start - e.next
		if d > 40*time.Millisecond || d < -40*time.Millisecond {
			e.over40++
		}
		if (d > 20*time.Millisecond || d < -20*time.Millisecond) && len(e.offs) < 40 {
			e.offs = append(e.offs, fmt.Sprintf("%v:%+v", (start-e.t0).Round(10*time.Millisecond), d.Round(time.Millisecond)))
		}
		e.maxLate, e.maxEarly = max(e.maxLate, d), min(e.maxEarly, d)
	}
	e.next = start + time.Duration(len(p))*time.Second/time.Duration(rate)
	e.blocks++
	if len(e.lat) < 1<<16 {
		e.lat = append(e.lat, lat)
	}
	for i, v := range p {
		t := start + time.Duration(i)*time.Second/time.Duration(rate)
		b := int((t - e.t0) / envBin)
		if b < 0 || b >= e.maxBins {
			continue
		}
		e.sum[b] += math.Abs(float64(v))
		e.cnt[b]++
	}
}

func (e *envTimeline) envelope() []float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]float64, len(e.sum))
	for i := range out {
		if e.cnt[i] > 0 {
			out[i] = e.sum[i] / float64(e.cnt[i])
		}
	}
	return out
}

func (e *envTimeline) disagreements() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("%d of %d blocks more than 40 ms off the previous block's end (extremes %v, +%v; over 20 ms: %s)",
		e.over40, e.blocks, e.maxEarly.Round(time.Millisecond), e.maxLate.Round(time.Millisecond), strings.Join(e.offs, " "))
}

func (e *envTimeline) latRange() (lo, hi, mean time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.lat) == 0 {
		return 0, 0, 0
	}
	lo, hi = e.lat[0], e.lat[0]
	var s time.Duration
	for _, l := range e.lat {
		lo, hi, s = min(lo, l), max(hi, l), s+l
	}
	return lo, hi, s / time.Duration(len(e.lat))
}

// residualDelay finds the lag (far leads mic) in [lo, hi] maximising the
// normalised cross-correlation of the envelopes over bins [from, to).
func residualDelay(far, mic []float64, from, to int, lo, hi time.Duration) (time.Duration, float64) {
	best, bestLag := -2.0, 0
	for lag := int(lo / envBin); lag <= int(hi/envBin); lag++ {
		var sf, sm, n float64
		for b := from; b < to; b++ {
			if b-lag < 0 || b-lag >= len(far) || b >= len(mic) {
				continue
			}
			sf += far[b-lag]
			sm += mic[b]
			n++
		}
		if n < 100 {
			continue
		}
		mf, mm := sf/n, sm/n
		var c, ef, em float64
		for b := from; b < to; b++ {
			if b-lag < 0 || b-lag >= len(far) || b >= len(mic) {
				continue
			}
			x, y := far[b-lag]-mf, mic[b]-mm
			c += x * y
			ef += x * x
			em += y * y
		}
		if ef == 0 || em == 0 {
			continue
		}
		if r := c / math.Sqrt(ef*em); r > best {
			best, bestLag = r, lag
		}
	}
	return time.Duration(bestLag) * envBin, best
}

// probeMic records what the device captured, placed at its ADC time as
// aec.Source places it.
type probeMic struct {
	hw.AudioSource
	lr  hw.LatencyReporter
	clk clock.Clock
	env *envTimeline
}

func (m *probeMic) Read(dst []int16) (int, error) {
	n, err := m.AudioSource.Read(dst)
	if n > 0 {
		lat := m.lr.DeviceLatency()
		t := m.clk.Mono() - time.Duration(n)*time.Second/time.Duration(m.Format().SampleRate) - lat
		m.env.add(dst[:n], t, m.Format().SampleRate, lat)
	}
	return n, err
}

func (m *probeMic) DeviceLatency() time.Duration { return m.lr.DeviceLatency() }
func (m *probeMic) Unwrap() hw.AudioSource       { return m.AudioSource }

// probeSpk records what the speaker played, placed at its DAC time as
// aec.Tap places it. It keeps the wrapped speaker's capabilities visible
// (device flush, latency) by embedding it.
type probeSpk struct {
	*realSpeaker
	clk clock.Clock
	env *envTimeline
}

func (s *probeSpk) Write(p []int16) error {
	if err := s.realSpeaker.Write(p); err != nil {
		return err
	}
	lat := s.realSpeaker.DeviceLatency()
	rate := s.Format().SampleRate
	dac := s.clk.Mono() - time.Duration(len(p))*time.Second/time.Duration(rate) + lat
	s.env.add(p, dac, rate, lat)
	return nil
}

// echoReport is the probe's finding, one line per window.
func echoReport(far, mic *envTimeline, upto time.Duration, window time.Duration) string {
	fe, me := far.envelope(), mic.envelope()
	var b strings.Builder
	n := int(upto / envBin)
	w := int(window / envBin)
	for from := 0; from+w <= n; from += w {
		d, r := residualDelay(fe, me, from, from+w, -500*time.Millisecond, 800*time.Millisecond)
		fmt.Fprintf(&b, " [%v..%v: %v r=%.2f]", time.Duration(from)*envBin, time.Duration(from+w)*envBin, d, r)
	}
	lo, hi, mean := far.latRange()
	fmt.Fprintf(&b, " speaker DeviceLatency %v..%v (mean %v);", lo.Round(time.Millisecond), hi.Round(time.Millisecond), mean.Round(time.Millisecond))
	lo, hi, mean = mic.latRange()
	fmt.Fprintf(&b, " mic DeviceLatency %v..%v (mean %v);", lo.Round(time.Millisecond), hi.Round(time.Millisecond), mean.Round(time.Millisecond))
	fmt.Fprintf(&b, " speaker timestamps: %s; mic timestamps: %s", far.disagreements(), mic.disagreements())
	return b.String()
}

// sampleAlignment logs, every time it changes, the canceller's alignment
// state: the estimated residual delay, its shifts and the reference's
// re-anchorings. It returns the function that stops it.
func sampleAlignment(t interface{ Logf(string, ...any) }, a *agent, clk clock.Clock) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	t0 := clk.Mono()
	go func() {
		defer wg.Done()
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		var last string
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			s := fmt.Sprintf("delay=%v shifts=%d jumps=%d", a.aecSrc.EstimatedDelay(), a.aecSrc.Shifts(), a.aecRef.Jumps())
			if s != last {
				t.Logf("alignment at %v: %s", (clk.Mono() - t0).Round(10*time.Millisecond), s)
				last = s
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
