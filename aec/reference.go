package aec

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/hw"
)

// refRingLen is the far-end history kept: 4 s at 16 kHz.
const refRingLen = 1 << 16

// reanchor: when the device timestamps of the blocks and the running sample
// count disagree by more than this, the timeline is re-anchored on the
// timestamps: at once after a pause in the writes (the speaker played
// silence nobody wrote, or was reopened), otherwise only once the
// disagreement has lasted persistAfter of audio. Device timestamps jitter
// and spike (PortAudio's DAC times through ALSA's PulseAudio plugin jump by
// tens of ms, and the first blocks' latency is a fallback until the first
// device callback): following one block's timestamp would shift the whole
// reference against the echo.
const reanchor = 40 * time.Millisecond

// persistAfter: see reanchor. A timeline that moved later (the device
// underflowed: it played silence, so everything after plays later) is
// followed after persistBlocksLater consecutive blocks agree, because the
// echo then comes later than the canceller's filter reaches; one that
// moved earlier (a flush dropped queued audio) after persistAfter.
const (
	persistAfter       = 100 * time.Millisecond
	persistBlocksLater = 2
)

// Reference is the far-end reference signal: what the speaker played,
// resampled to 16 kHz and positioned on the agent clock at the time it
// reached the DAC. Played is called by one goroutine (the producer: the
// speaker's writer), Read by one other (the consumer: the capture pump). It
// is lock-free and does not allocate after construction.
type Reference struct {
	clk  clock.Clock
	rs   *resample.Resampler
	buf  []int16
	ring []int16
	// written is the next ring index to be written (published with a
	// release store after the samples), origin the clock.Mono time of
	// index 0 (nanoseconds), started whether origin is set (stored after
	// origin). Only the producer writes them; the consumer reads them.
	// The ring is only ever appended to: a timeline found to run ahead of
	// the device moves origin, never rewrites samples a reader may hold.
	written atomic.Int64
	origin  atomic.Int64
	started atomic.Bool
	jumps   atomic.Int64
	// pendFrom and pendTo (clock.Mono, ns): the producer is handing the
	// device a block with the far end's audio in it (expect) that the ring
	// does not hold yet, which may play from pendFrom to pendTo (from the
	// device latency after it was handed over to its duration later,
	// widened by pendSlack); pendTo is 0 when there is none (played clears
	// it). A consumer reading past written at a time in that window may
	// have the block's echo in its mic and not the block (Source.RefLate).
	pendFrom, pendTo atomic.Int64
	// Producer state: the last call (clock time, block length) and the
	// disagreement under way (sign, audio so far, smallest magnitude).
	lastCall, lastLen time.Duration
	pendSign          int
	pendSamples       int64
	pendBlocks        int
	pendMin           int64
}

// NewReference returns a Reference for a speaker of the given rate (mono).
func NewReference(clk clock.Clock, speakerRate int) (*Reference, error) {
	rs, err := resample.New(speakerRate, Rate, resample.QualityDefault)
	if err != nil {
		return nil, fmt.Errorf("aec: reference: %w", err)
	}
	return &Reference{clk: clk, rs: rs, buf: make([]int16, rs.OutLen(speakerRate)), ring: make([]int16, refRingLen)}, nil
}

func (r *Reference) index(t time.Duration) int64 {
	return int64((t - time.Duration(r.origin.Load())) * Rate / time.Second)
}

// Played records p (mono, the speaker's rate; at most one second) whose
// first sample reached (or will reach) the DAC at clock.Mono time dac.
// Device timestamps jitter and spike: a disagreement with the running
// sample count is followed only after a pause or once it persists (see
// reanchor).
func (r *Reference) Played(p []int16, dac time.Duration) { r.played(p, dac, false) }

// PlayedExact is Played for timestamps that are exact (a sink that knows
// where each block plays, e.g. the simulated speaker): any disagreement of
// more than exactTol is followed at once (a gap of silence when later, the
// timeline moved back when earlier, as after a flush).
func (r *Reference) PlayedExact(p []int16, dac time.Duration) { r.played(p, dac, true) }

// exactTol is the disagreement PlayedExact tolerates (resampling rounding).
const exactTol = time.Millisecond

func (r *Reference) played(p []int16, dac time.Duration, exact bool) {
	if len(p) > r.rs.InRate() {
		p = p[:r.rs.InRate()]
	}
	now := r.clk.Mono()
	pause := now-r.lastCall > r.lastLen+reanchor
	r.lastCall, r.lastLen = now, time.Duration(len(p))*time.Second/time.Duration(r.rs.InRate())
	w := r.written.Load()
	tol := int64(reanchor * Rate / time.Second)
	if exact {
		tol = int64(exactTol * Rate / time.Second)
	}
	if !r.started.Load() {
		r.origin.Store(int64(dac))
		r.started.Store(true)
		w = 0
	} else if off := r.index(dac) - w; off > tol && (pause || exact) {
		// A pause: nobody wrote for a while and the device timestamps
		// moved on; zero the gap so a reader sees silence there.
		r.gap(w, off)
		w += off
		r.pendSign = 0
	} else if off > tol || off < -tol {
		sign := 1
		if off < 0 {
			sign = -1
		}
		if sign != r.pendSign {
			r.pendSign, r.pendSamples, r.pendBlocks, r.pendMin = sign, 0, 0, off
		}
		if abs64(off) < abs64(r.pendMin) {
			r.pendMin = off
		}
		r.pendSamples += int64(len(p)) * Rate / int64(r.rs.InRate())
		r.pendBlocks++
		if exact || sign > 0 && r.pendBlocks >= persistBlocksLater || r.pendSamples >= int64(persistAfter*Rate/time.Second) {
			// The device timeline really moved: by the smallest
			// disagreement seen while it lasted (a spike inside it
			// does not count).
			if r.pendMin > 0 {
				r.gap(w, r.pendMin)
				w += r.pendMin
			} else {
				r.origin.Add(r.pendMin * int64(time.Second) / Rate)
				r.jumps.Add(1)
			}
			r.pendSign = 0
		}
	} else {
		r.pendSign = 0
	}
	n := r.rs.Process(r.buf, p)
	for _, v := range r.buf[:n] {
		r.ring[w&(refRingLen-1)] = v
		w++
	}
	r.written.Store(w)
	r.pendTo.Store(0)
}

// pendSlack widens the window in which a block announced by expect may
// play beyond its duration and the device latency (scheduling, a latency
// reported low).
const pendSlack = 20 * time.Millisecond

// expect announces a block p the producer is about to hand the device (it
// is recorded by Played once the device took it): pending, if p holds the
// far end's audio (above farActive), while it may play: from the device
// latency lat (now: the time until what the device holds has played) for
// its duration, widened by pendSlack. Producer goroutine.
func (r *Reference) expect(p []int16, lat time.Duration) {
	if energy(p) <= farActive*farActive*float64(len(p)) {
		return
	}
	start := r.clk.Mono() + lat
	r.pendFrom.Store(int64(start - pendSlack))
	r.pendTo.Store(int64(start + time.Duration(len(p))*time.Second/time.Duration(r.rs.InRate()) + pendSlack))
}

// behind reports whether a read of the ring up to index end (exclusive),
// made after it for mic audio captured from clock time at for d, may lack
// audio the device is playing: a block is pending, it may be playing then
// (expect's window), and the ring holds less than end. A block the device
// was handed long ago and still has not taken (a stream not started yet)
// plays nothing meanwhile. Called before the read, loading pendTo before
// written: a block recorded in between makes it report true when the
// read then has it (the safe error), never false when the read lacks it.
// Consumer goroutine.
func (r *Reference) behind(end int64, at, d time.Duration) bool {
	to := time.Duration(r.pendTo.Load())
	if to == 0 || end <= r.written.Load() {
		return false
	}
	return at <= to && at+d > time.Duration(r.pendFrom.Load())
}

// gap zeroes n ring samples from w (a stretch nobody played) and counts a
// re-anchoring.
func (r *Reference) gap(w, n int64) {
	r.jumps.Add(1)
	for i := w; i < w+n && i < w+refRingLen; i++ {
		r.ring[i&(refRingLen-1)] = 0
	}
	r.rs.Reset()
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Jumps counts re-anchorings of the timeline (speaker pauses, reopen).
func (r *Reference) Jumps() int64 { return r.jumps.Load() }

// Read copies into dst the far-end samples that reached the DAC from clock
// time t on (zeros for what nobody played, or what is older than the ring).
func (r *Reference) Read(dst []int16, t time.Duration) {
	r.readAt(dst, r.index(t))
}

// ReadIndex is Read by ring index; Index converts a time.
func (r *Reference) readAt(dst []int16, idx int64) {
	w := r.written.Load()
	if !r.started.Load() && w == 0 {
		clear(dst)
		return
	}
	for i := range dst {
		j := idx + int64(i)
		if j < 0 || j >= w || j < w-refRingLen+Rate/10 {
			dst[i] = 0
			continue
		}
		dst[i] = r.ring[j&(refRingLen-1)]
	}
}

// Tap wraps the speaker: every block written is recorded in the Reference
// at the time the device reports it reaches the DAC: before it is handed
// to the device at the time nextStarter gives, if the sink has it, else
// after (hw.LatencyReporter; 0 latency if the sink has neither).
// Capabilities of the wrapped sink are reachable through Unwrap.
type Tap struct {
	hw.AudioSink
	ref  *Reference
	clk  clock.Clock
	lat  hw.LatencyReporter
	next nextStarter
	up   upReporter
	rate int
	// silence stands in for a block the device does not play (up false);
	// grown to the largest such block, then reused. unplayed counts the
	// samples of such blocks.
	silence  []int16
	unplayed atomic.Int64
}

// upReporter is an optional capability of a sink: whether its device is
// playing what it is written (hw/portaudio's Sink: false while the device
// is gone and Write discards the audio). Write goroutine.
//
// While it is not, the Tap records silence: the echo canceller must not be
// told the robot spoke when nothing played. Given the far end with no echo
// in the mic, the cancellers' filters unlearn the room (WebRTC's) or
// diverge and reset (speex's), and the echo that comes back with the
// device passes for the user (duplex-bench --speaker-dropout-ms: 13 and 33
// false barge-ins in 50 replies with 300 ms and 5 s dropouts every 20 s).
type upReporter interface {
	Up() bool
}

// nextStarter is an optional capability of a sink: the clock.Mono time at
// which the first sample of a block handed to Write now will reach the
// DAC (Write goroutine). A sink that knows it exactly (the simulated
// speaker) lets the Tap record the block before it plays. Recorded after a
// Write that blocks until the block has played, the reference would lag
// the echo by up to a block, and by however late the Write returned on a
// loaded machine: the start of a reply then reached the mic before the
// canceller had it, and the robot's voice passed as the user's.
type nextStarter interface {
	NextStart() time.Duration
}

// NewTap returns a Tap writing to sink and recording into ref.
func NewTap(sink hw.AudioSink, ref *Reference, clk clock.Clock) *Tap {
	t := &Tap{AudioSink: sink, ref: ref, clk: clk, rate: sink.Format().SampleRate}
	t.lat, _ = hw.FindSink[hw.LatencyReporter](sink)
	t.next, _ = hw.FindSink[nextStarter](sink)
	t.up, _ = hw.FindSink[upReporter](sink)
	return t
}

// Unwrap returns the wrapped sink.
func (t *Tap) Unwrap() hw.AudioSink { return t.AudioSink }

// Unplayed is how much of what the Tap was written the device did not
// play (it reported itself down) and the reference holds as silence. Any
// goroutine.
func (t *Tap) Unplayed() time.Duration {
	return time.Duration(t.unplayed.Load()) * time.Second / time.Duration(t.rate)
}

// Write implements hw.AudioSink (mono sinks; a stereo sink's blocks are
// not recorded).
func (t *Tap) Write(p []int16) error {
	if t.AudioSink.Format().Channels != 1 {
		return t.AudioSink.Write(p)
	}
	played := p // what the reference records
	if t.up != nil && !t.up.Up() {
		if cap(t.silence) < len(p) {
			t.silence = make([]int16, len(p))
		}
		played = t.silence[:len(p)]
		t.unplayed.Add(int64(len(p)))
	}
	if t.next != nil {
		t.ref.PlayedExact(played, t.next.NextStart())
		return t.AudioSink.Write(p)
	}
	// Recorded once the device took it; announced before, so that a read
	// of the reference meanwhile knows it lacks audio being played
	// (Reference.behind): the goroutine may record it late on a loaded
	// machine, after the capture read its echo.
	var lat time.Duration
	if t.lat != nil {
		lat = t.lat.DeviceLatency()
	}
	t.ref.expect(played, lat)
	if err := t.AudioSink.Write(p); err != nil {
		t.ref.pendTo.Store(0)
		return err
	}
	// After Write returns, its last sample reaches the DAC DeviceLatency
	// later, so the first one did that minus the block's duration.
	dac := t.clk.Mono() - time.Duration(len(p))*time.Second/time.Duration(t.rate)
	if t.lat != nil {
		dac += t.lat.DeviceLatency()
	}
	t.ref.Played(played, dac)
	return nil
}
