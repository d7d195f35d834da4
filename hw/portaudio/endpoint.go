package portaudio

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// DeviceConfig selects and configures the device side of a Sink or Source.
type DeviceConfig struct {
	// Device is a device name or a unique part of it, as `robot-agent
	// devices` prints it; "" selects the system default. See Match.
	Device string
	// SampleRate at the device; 0 uses the device's default rate, falling
	// back to common rates if the device refuses it.
	SampleRate int
	// Channels at the device; 0 uses min(device maximum, 2).
	Channels int
	// PeriodMS is the callback period (default 10 ms).
	PeriodMS int
	// Latency suggested to PortAudio for the device buffer; 0 uses the
	// device's default low latency, but at least three periods (room for
	// the sound server's client thread when the device is PulseAudio).
	Latency time.Duration
	// RealtimePriority is the SCHED_FIFO priority the callback thread asks
	// for on its first callback: 0 uses DefaultRealtimePriority, -1 keeps
	// normal scheduling. The callback never enters Go, so a real-time
	// thread cannot be held up by the Go runtime. Without the privilege
	// (CAP_SYS_NICE or an RLIMIT_RTPRIO of at least this priority) the
	// thread stays at normal priority and one warning is logged.
	RealtimePriority int
}

// DefaultRealtimePriority is the callback thread's SCHED_FIFO priority by
// default; build/systemd/robot-agent.service grants LimitRTPRIO=20.
const DefaultRealtimePriority = 20

// Limits on DeviceConfig.
const (
	maxDeviceRate    = 384000
	minDeviceRate    = 8000
	maxPeriodMS      = 100
	defaultPeriod    = 10
	minDevicePeriods = 3
)

var fallbackRates = []int{48000, 44100, 32000, 24000, 16000}

func (c DeviceConfig) validate(what string) error {
	switch {
	case c.SampleRate != 0 && (c.SampleRate < minDeviceRate || c.SampleRate > maxDeviceRate):
		return fmt.Errorf("%w: portaudio: %s sample rate %d Hz out of range %d..%d", ErrInvalidConfig, what, c.SampleRate, minDeviceRate, maxDeviceRate)
	case c.Channels < 0 || c.Channels > 8:
		return fmt.Errorf("%w: portaudio: %s channels %d out of range 0..8", ErrInvalidConfig, what, c.Channels)
	case c.PeriodMS < 0 || c.PeriodMS > maxPeriodMS:
		return fmt.Errorf("%w: portaudio: %s period %d ms out of range 0..%d", ErrInvalidConfig, what, c.PeriodMS, maxPeriodMS)
	case c.RealtimePriority < -1 || c.RealtimePriority > 99:
		return fmt.Errorf("%w: portaudio: %s realtime priority %d out of range -1..99", ErrInvalidConfig, what, c.RealtimePriority)
	case c.Latency < 0 || c.Latency > time.Second:
		return fmt.Errorf("%w: portaudio: %s latency %v out of range 0..1s", ErrInvalidConfig, what, c.Latency)
	}
	return nil
}

// ErrInvalidConfig wraps configuration errors of NewSink and NewSource.
var ErrInvalidConfig = errors.New("portaudio: invalid config")

// endpoint states (supervisor-owned, Host.mu).
const (
	epDown = iota
	epRunning
	epClosed
)

// conn is one opened-and-started stream of an endpoint as the data
// goroutine sees it. A new conn is published at every (re)open.
type conn struct {
	ring    ring
	rate    int // device rate
	ch      int // device channels
	period  int // device frames per callback
	latency time.Duration
	live    atomic.Bool
	// pendingNS is, for DeviceLatency, the audio the data goroutine holds
	// outside the ring (Source: converted samples Read has not returned)
	// plus the resampler's delay, in nanoseconds. Set by the data goroutine.
	pendingNS atomic.Int64
}

// endpoint is the supervisor's side of a Sink or Source: which device it
// wants, the stream it has, and its outage bookkeeping.
type endpoint struct {
	h      *Host
	output bool
	cfg    DeviceConfig
	// goRate is the data goroutine's rate (conversions must exist to it).
	goRate int
	// bufMS is the queue wanted between Go and the callback: the ring
	// holds it plus slack; output rings start each stream with bufMS of
	// silence. fadeMS is the length of the callback's fades.
	bufMS, fadeMS int

	conn    atomic.Pointer[conn]
	inUse   atomic.Int32 // data goroutines inside ring operations
	closing atomic.Bool
	closed  chan struct{}

	// Supervisor state, Host.mu.
	state        int
	st           stream
	dev          Device
	rings        []ring // every ring allocated, freed at close
	lastCB       uint64
	lastProgress time.Duration
	downSince    time.Duration
	retryAt      time.Duration
	backoff      time.Duration
	attempts     int
	last         ringStats
	lastXrunLog  time.Duration
	cad          *Cadence
	tbuf         []CallbackTiming
	rtLogged     bool
	lateMax      time.Duration

	m struct {
		lost, reopened, underruns, concealed, overruns, xruns *metrics.Counter
		devUnderflows, devOverflows, timingLost               *metrics.Counter
		up, lateMaxUS, delayUS                                *metrics.Gauge
		lateness, jitter                                      *metrics.Histogram
	}
}

// TimingBuckets are the bounds (seconds) of the callback lateness and
// DAC/ADC jitter histograms: 50 µs to 100 ms.
var TimingBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1}

func newEndpoint(h *Host, output bool, cfg DeviceConfig, goRate, bufMS, fadeMS int) *endpoint {
	ep := &endpoint{h: h, output: output, cfg: cfg, goRate: goRate, bufMS: bufMS, fadeMS: fadeMS, closed: make(chan struct{})}
	if ep.cfg.PeriodMS == 0 {
		ep.cfg.PeriodMS = defaultPeriod
	}
	reg := h.cfg.Metrics
	p := "robot_agent_audio_" + direction(output) + "_"
	d := direction(output)
	ep.m.lost = reg.Counter(p+"lost_total", "Times the audio "+d+" device was lost or found missing.")
	ep.m.reopened = reg.Counter(p+"reopened_total", "Times the audio "+d+" device was reopened after an outage.")
	ep.m.up = reg.Gauge(p+"up", "1 while the audio "+d+" device stream runs, 0 while degraded.")
	ep.m.xruns = reg.Counter(p+"xruns_total", "Device callbacks PortAudio flagged with any under- or overflow.")
	ep.m.devUnderflows = reg.Counter(p+"device_underflows_total", "Device callbacks PortAudio flagged with an "+d+" underflow (device level, not the ring).")
	ep.m.devOverflows = reg.Counter(p+"device_overflows_total", "Device callbacks PortAudio flagged with an "+d+" overflow (device level, not the ring).")
	ep.m.timingLost = reg.Counter(p+"timing_records_lost_total", "Callback timing records overwritten before the supervisor read them.")
	ep.m.lateness = reg.Histogram(p+"callback_lateness_seconds", "How late each "+d+" device callback started against the cadence of the device clock.", TimingBuckets)
	ep.m.jitter = reg.Histogram(p+"buffer_time_jitter_seconds", "Deviation of the spacing of successive "+map[bool]string{true: "DAC", false: "ADC"}[output]+" buffer times from the period (PortAudio time info).", TimingBuckets)
	ep.m.lateMaxUS = reg.Gauge(p+"callback_lateness_max_microseconds", "Largest "+d+" callback lateness since start.")
	ep.m.delayUS = reg.Gauge(p+"device_delay_microseconds", "Last "+d+" device delay from PortAudio's time info (callback to DAC, or ADC to callback).")
	ep.tbuf = make([]CallbackTiming, 256)
	if output {
		ep.m.underruns = reg.Counter(p+"underruns_total", "Output callbacks that found the ring short of audio: the ring ran dry (Go side late); device underflows are counted separately.")
		ep.m.concealed = reg.Counter(p+"concealed_frames_total", "Output frames filled with a fade or silence because the ring was short.")
	} else {
		ep.m.overruns = reg.Counter(p+"overrun_frames_total", "Input frames dropped because the reader fell behind.")
	}
	return ep
}

func (ep *endpoint) name() string { return direction(ep.output) }

// acquire marks a data goroutine as using the current conn's ring; it fails
// once the endpoint is closing. Pair with release.
func (ep *endpoint) acquire() bool {
	ep.inUse.Add(1)
	if ep.closing.Load() {
		ep.inUse.Add(-1)
		return false
	}
	return true
}

func (ep *endpoint) release() { ep.inUse.Add(-1) }

// formats lists the (rate, channels) pairs to try on d, best first.
func (ep *endpoint) formats(d Device) [][2]int {
	maxCh := d.MaxInputChannels
	if ep.output {
		maxCh = d.MaxOutputChannels
	}
	ch := ep.cfg.Channels
	chs := []int{ch}
	if ch == 0 {
		chs = []int{min(maxCh, 2)}
		if chs[0] == 2 {
			chs = append(chs, 1)
		}
	}
	rates := []int{ep.cfg.SampleRate}
	if ep.cfg.SampleRate == 0 {
		rates = []int{}
		if d.DefaultSampleRate >= minDeviceRate && d.DefaultSampleRate <= maxDeviceRate {
			rates = append(rates, d.DefaultSampleRate)
		}
		for _, r := range fallbackRates {
			if r != d.DefaultSampleRate {
				rates = append(rates, r)
			}
		}
	}
	// Keep the format of the last stream first, so a reopened device
	// reuses the ring and the data goroutine's converters.
	var out [][2]int
	if c := ep.conn.Load(); c != nil {
		out = append(out, [2]int{c.rate, c.ch})
	}
	for _, c := range chs {
		for _, r := range rates {
			f := [2]int{r, c}
			if (len(out) == 0 || out[0] != f) && ep.convertible(r) {
				out = append(out, f)
			}
		}
	}
	return out
}

// convertible reports whether the resampler converts between the device
// rate and the data goroutine's rate.
func (ep *endpoint) convertible(rate int) bool {
	in, out := ep.goRate, rate
	if !ep.output {
		in, out = out, in
	}
	_, err := resample.New(in, out, resample.QualityLow)
	return err == nil
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// open finds the device, opens and starts a stream, and publishes it.
// Host.mu held; ep.state is epDown.
func (ep *endpoint) open(now time.Duration) error {
	h := ep.h
	d, err := Match(h.devs, ep.cfg.Device, ep.output)
	if err != nil {
		return err
	}
	prev := ep.conn.Load()
	var firstErr error
	for _, f := range ep.formats(d) {
		rate, ch := f[0], f[1]
		period := max(1, rate*ep.cfg.PeriodMS/1000)
		var r ring
		if prev != nil && prev.rate == rate && prev.ch == ch {
			r = prev.ring
		} else {
			frames := nextPow2(max(rate*ep.bufMS/1000+2*period, 4*period))
			lead := 0
			if ep.output {
				lead = rate * ep.bufMS / 1000
			}
			r, err = h.be.newRing(ep.output, frames, ch, max(1, rate*ep.fadeMS/1000), lead)
			if err != nil {
				return err
			}
			ep.rings = append(ep.rings, r)
		}
		if ep.output {
			// Drop what an earlier stream left unplayed and start with the
			// lead of silence (no underrun while the writer catches up).
			r.flush()
			r.prime()
		}
		lat := ep.cfg.Latency
		if lat == 0 {
			lat = d.DefaultLowInputLatency
			if ep.output {
				lat = d.DefaultLowOutputLatency
			}
			lat = max(lat, minDevicePeriods*time.Duration(ep.cfg.PeriodMS)*time.Millisecond)
		}
		// Records of an earlier stream on this ring are not this stream's.
		ep.discardTimings(r)
		st, err := h.be.open(d, ep.output, streamParams{rate: rate, channels: ch, periodFrames: period, latency: lat, realtimePriority: ep.rtPriority()}, r)
		if err == nil {
			if err = st.start(); err != nil {
				st.close()
			}
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		c := &conn{ring: r, rate: rate, ch: ch, period: period, latency: st.latency()}
		c.live.Store(true)
		ep.cad = NewCadence(rate)
		ep.rtLogged = false
		ep.st, ep.dev, ep.state = st, d, epRunning
		ep.lastCB, ep.lastProgress = r.stats().callbacks, now
		ep.last = r.stats()
		ep.conn.Store(c)
		ep.m.up.Set(1)
		if ep.downSince != 0 {
			ep.m.reopened.Inc()
			h.log.Info("portaudio: audio "+ep.name()+" device back", "device", d.Name,
				"down_for", (now - ep.downSince).Round(time.Millisecond), "attempts", ep.attempts+1,
				"format", fmt.Sprintf("%d Hz x %d ch", rate, ch), "latency", c.latency)
		} else {
			h.log.Info("portaudio: audio "+ep.name()+" device open", "device", d.Name,
				"format", fmt.Sprintf("%d Hz x %d ch", rate, ch), "period_frames", period, "latency", c.latency,
				"realtime_priority", max(ep.rtPriority(), 0))
		}
		ep.attempts, ep.downSince = 0, 0
		return nil
	}
	return firstErr
}

// stop closes the running stream and marks the conn dead. Host.mu held.
func (ep *endpoint) stop() {
	if c := ep.conn.Load(); c != nil {
		c.live.Store(false)
	}
	if ep.st != nil {
		if err := ep.st.close(); err != nil {
			ep.h.log.Debug("portaudio: closing stream", "dir", ep.name(), "err", err)
		}
		ep.st = nil
	}
	ep.m.up.Set(0)
	if ep.state == epRunning {
		ep.state = epDown
	}
}

// lose handles a running stream that stopped working: log once, count,
// degrade, schedule retries. Host.mu held.
func (ep *endpoint) lose(now time.Duration, reason string) {
	ep.stop()
	ep.state = epDown
	ep.downSince = max(now, 1)
	ep.attempts = 0
	ep.backoff = ep.h.cfg.RetryMin
	ep.retryAt = now + ep.backoff
	ep.m.lost.Inc()
	ep.h.log.Warn("portaudio: audio "+ep.name()+" device lost; continuing without it and retrying",
		"device", ep.dev.Name, "reason", reason)
}

// startDegraded handles a device missing at start. Host.mu held.
func (ep *endpoint) startDegraded(now time.Duration, err error) {
	ep.state = epDown
	ep.downSince = max(now, 1)
	ep.backoff = ep.h.cfg.RetryMin
	ep.retryAt = now + ep.backoff
	ep.m.lost.Inc()
	ep.m.up.Set(0)
	want := ep.cfg.Device
	if want == "" {
		want = "(system default)"
	}
	ep.h.log.Warn("portaudio: audio "+ep.name()+" device not available; starting without it and retrying",
		"device", want, "err", err)
}

// retryFailed schedules the next attempt with exponential backoff.
// Host.mu held.
func (ep *endpoint) retryFailed(now time.Duration, err error) {
	ep.attempts++
	ep.backoff = min(2*ep.backoff, ep.h.cfg.RetryMax)
	ep.retryAt = now + ep.backoff
	ep.h.log.Debug("portaudio: reopen failed", "dir", ep.name(), "attempt", ep.attempts, "next_in", ep.backoff, "err", err)
}

// watch checks a running stream's progress and exports its counters.
// Host.mu held.
func (ep *endpoint) watch(now time.Duration) {
	c := ep.conn.Load()
	s := c.ring.stats()
	ep.export(s, now)
	ep.timing(c)
	ep.logRealtime(s.rtResult)
	if s.callbacks != ep.lastCB {
		ep.lastCB, ep.lastProgress = s.callbacks, now
		return
	}
	if stalled := now - ep.lastProgress; stalled >= ep.h.cfg.StallTimeout {
		ep.lose(now, fmt.Sprintf("no device callback for %v", stalled.Round(time.Millisecond)))
	}
}

// export adds the ring's counters since the last call to the metrics.
func (ep *endpoint) export(s ringStats, now time.Duration) {
	l := ep.last
	if s.callbacks < l.callbacks { // a new ring
		l = ringStats{}
	}
	ep.m.xruns.Add(int64(s.xruns - l.xruns))
	if ep.output {
		ep.m.underruns.Add(int64(s.underrunCallbacks - l.underrunCallbacks))
		ep.m.concealed.Add(int64(s.underrunFrames - l.underrunFrames))
	} else {
		ep.m.overruns.Add(int64(s.overrunFrames - l.overrunFrames))
	}
	if s.xruns != l.xruns && (ep.lastXrunLog == 0 || now-ep.lastXrunLog >= 30*time.Second) {
		ep.lastXrunLog = max(now, 1)
		ep.h.log.Warn("portaudio: device reported "+map[bool]string{true: "underflows", false: "overflows"}[ep.output]+" (counted; logged at most every 30 s)",
			"dir", ep.name(), "device", ep.dev.Name, "total", ep.m.xruns.Value())
	}
	ep.last = s
}

// rtPriority is the SCHED_FIFO priority to ask for, 0 for none.
func (ep *endpoint) rtPriority() int {
	switch p := ep.cfg.RealtimePriority; {
	case p < 0:
		return 0
	case p == 0:
		return DefaultRealtimePriority
	default:
		return p
	}
}

// logRealtime logs, once per stream, whether the callback thread got the
// real-time priority it asked for. Host.mu held.
func (ep *endpoint) logRealtime(res int32) {
	if ep.rtLogged || res == 0 {
		return
	}
	ep.rtLogged = true
	prio := ep.rtPriority()
	if res > 0 {
		n, err := raiseSoundServerThreads(prio)
		ep.h.log.Info("portaudio: audio "+ep.name()+" callback thread runs at real-time priority",
			"policy", "SCHED_FIFO", "priority", prio, "sound_server_client_threads_raised", n)
		if err != nil {
			ep.h.log.Warn("portaudio: could not raise the sound server's client thread to real-time priority", "err", err)
		}
		return
	}
	ep.h.log.Warn("portaudio: real-time priority not permitted; the audio "+ep.name()+" callback thread keeps normal priority "+
		"(grant LimitRTPRIO or CAP_SYS_NICE, see docs/deploy.md; audio_devices.realtime_priority: 0 turns the request off)",
		"priority", prio, "err", syscall.Errno(-res).Error())
}

// timing takes the callback records since the last call into the metrics:
// start lateness against the device cadence, buffer-time jitter, device
// under/overflows, the device delay. Host.mu held.
func (ep *endpoint) timing(c *conn) {
	for {
		n, lost := c.ring.timings(ep.tbuf)
		ep.m.timingLost.Add(int64(lost))
		for _, t := range ep.tbuf[:n] {
			ep.observe(t)
		}
		if n < len(ep.tbuf) {
			return
		}
	}
}

func (ep *endpoint) discardTimings(r ring) {
	for {
		if n, _ := r.timings(ep.tbuf); n < len(ep.tbuf) {
			return
		}
	}
}

func (ep *endpoint) observe(t CallbackTiming) {
	if f := ep.h.cfg.Timing; f != nil {
		defer f(ep.output, t)
	}
	if t.DeviceUnderflow(ep.output) {
		ep.m.devUnderflows.Inc()
	}
	if t.DeviceOverflow(ep.output) {
		ep.m.devOverflows.Inc()
	}
	if d := t.DeviceDelay(ep.output); d > 0 {
		ep.m.delayUS.Set(d.Microseconds())
	}
	late, jit, hasJit, ok := ep.cad.Observe(t)
	if hasJit {
		ep.m.jitter.ObserveDuration(jit)
	}
	if !ok {
		return
	}
	ep.m.lateness.ObserveDuration(late)
	if late > ep.lateMax {
		ep.lateMax = late
		ep.m.lateMaxUS.Set(late.Microseconds())
	}
}

// close stops the endpoint for good: blocked data calls return
// hw.ErrClosed, the stream is closed and the rings freed. Idempotent.
func (ep *endpoint) close() error {
	if !ep.closing.CompareAndSwap(false, true) {
		return nil
	}
	close(ep.closed)
	// Data goroutines leave ring operations within microseconds and their
	// waits end on ep.closed.
	for ep.inUse.Load() != 0 {
		time.Sleep(50 * time.Microsecond)
	}
	h := ep.h
	h.mu.Lock()
	ep.stop()
	ep.state = epClosed
	for _, r := range ep.rings {
		r.free()
	}
	ep.rings = nil
	ep.conn.Store(nil)
	h.mu.Unlock()
	h.unregister(ep)
	return nil
}

// errClosed is returned by data calls after Close.
var errClosed = fmt.Errorf("portaudio: %w", hw.ErrClosed)
