package duplex

import (
	"context"
	"math"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/volume"
)

func contextBackground() context.Context { return context.Background() }

// nullSink is the bench's speaker: the room gets the audio separately.
// Its device latency is one frame: Tap then places a block's first sample
// at the clock time of its Write (the block plays during the next frame).
// With SpeakerClock its latency is speakerLatency: what is written plays
// that much later (the room hears it then).
type nullSink struct {
	lat time.Duration
	// down: the device is gone (a speaker dropout; benchSource sets it
	// before each write), reported by Up unless unreported.
	down, unreported bool
}

func (*nullSink) Format() hw.AudioFormat { return hw.TTSFormat }
func (*nullSink) Write([]int16) error    { return nil }
func (*nullSink) Close() error           { return nil }

// Up reports the device running, as hw/portaudio's Sink does.
func (s *nullSink) Up() bool { return !s.down || s.unreported }

func (s *nullSink) DeviceLatency() time.Duration {
	if s.lat > 0 {
		return s.lat
	}
	return frameMS * time.Millisecond
}

// speakerLatency is the speaker's device latency with SpeakerClock (a
// real output buffer: playback's 60 ms queue and the device's own).
const speakerLatency = 80 * time.Millisecond

// benchSource is the simulated mic. Each Read of one frame at clock time t
// plays the far end's frame [t, t+20 ms) through the speaker tap and the
// room, captures the mic (near end + echo + noise) for the same stretch,
// and advances the clock by the frame. By default the clock is the mic's
// and the speaker is written at its pace (one 20 ms block per mic frame,
// played at once): with a clock offset the echo's delay then slides, but
// the far end is written at the mic's pace, so with the mic slower than
// the speaker the echo overtakes what was written within a minute or two
// (no run with negative drift_ppm is valid beyond that). With SpeakerClock
// the clock is the speaker's (the agent's clock, which an I²S or HDMI
// speaker on the board shares): a mic frame lasts 1/(1+ppm) of 20 ms on
// it, the far end is written at the speaker's pace (blocks a sample longer
// or shorter now and then) and plays speakerLatency after it is written,
// as a real player paced by its device; times compared with mic positions
// are converted back (benchSink).
type benchSource struct {
	clk        *clock.Fake
	t0         time.Duration
	path, echo *room.Path
	out        hw.AudioSink // what the chain writes the far end to: dev, or a clip guard over it
	dev        *deviceOut
	far        []int16
	prelude    []int16 // Scenario.Prelude, from preStart (16 kHz samples; < 0: none)
	preStart   int
	farStarts  []int // reply starts, speaker samples at 16 kHz
	replyLen   int
	near       []int16
	total, pos int
	ratio      float64 // speaker samples per mic sample (SpeakerClock; else 1)
	spk        int64   // speaker samples written so far, at FarRate
	lead       int64   // samples at 16 kHz between writing and playing (SpeakerClock)

	mic, farBuf, echoBuf []int16
	echoTL, micTL        []int16
	// gaps are the mic dropouts, [start, end) in mic samples, in order;
	// spkGaps the speaker's (it plays nothing; speaker reports it).
	gaps, spkGaps [][2]int
	speaker       *nullSink
	spkAtten      float64      // > 0: in spkGaps the speaker plays at this gain instead of nothing
	vol           *volume.Sink // Scenario.VolumeDownDB: the robot's volume, above the tap
	volDown       float64      // its level in spkGaps (dB)
	// reportLost: Lost reports whether the last Read overlapped a mic
	// dropout (lost); else always false.
	reportLost, lost bool
	simCPU           time.Duration
}

func (b *benchSource) Format() hw.AudioFormat { return hw.MicFormat }

// Lost implements capture.LostReporter (Scenario.MicDropoutReported).
func (b *benchSource) Lost() bool   { return b.lost }
func (b *benchSource) Close() error { return nil }

// farBlock fills dst with the far end from speaker sample at (FarRate):
// the prelude, or the reply that overlaps it.
func (b *benchSource) farBlock(dst []int16, at int64) {
	clear(dst)
	if b.preStart >= 0 && copyAt(dst, at, int64(b.preStart)*FarRate/NearRate, b.prelude) {
		return
	}
	for _, st := range b.farStarts {
		if copyAt(dst, at, int64(st)*FarRate/NearRate, b.far) {
			return
		}
	}
}

// copyAt copies into dst (which starts at sample at) the part of src (which
// starts at sample st) that overlaps it, and reports whether any does.
func copyAt(dst []int16, at, st int64, src []int16) bool {
	if at+int64(len(dst)) <= st || at >= st+int64(len(src)) {
		return false
	}
	for i := range dst {
		if k := at + int64(i) - st; k >= 0 && k < int64(len(src)) {
			dst[i] = src[k]
		}
	}
	return true
}

func (b *benchSource) Read(dst []int16) (int, error) {
	if b.pos+len(dst) > b.total {
		return 0, hw.ErrClosed
	}
	if len(dst) != micFrame {
		return 0, hw.ErrClosed
	}
	c0 := threadCPU()
	at := b.pos
	end := int64(math.Floor(float64(at+micFrame) * b.ratio * FarRate / NearRate))
	n := int(min(max(end-b.spk, 0), int64(cap(b.farBuf))))
	blk := b.farBuf[:n]
	b.farBlock(blk, b.spk)
	down := overlaps(b.spkGaps, at, at+micFrame)
	if b.vol != nil {
		// Not a dropout: the robot's volume turned down meanwhile.
		level := 0.0
		if down {
			level = b.volDown
		}
		if b.vol.DB() != level {
			_ = b.vol.SetDB(level) // checked in Run
		}
		down = false
	}
	b.speaker.down = down
	c1 := threadCPU()
	b.out.Write(blk) // chain: the clip guard if any, the reference
	c2 := threadCPU()
	played := b.dev.last // what reached the device
	switch {
	case down && b.spkAtten > 0:
		for i, v := range played { // a volume turned down
			played[i] = int16(float64(v) * b.spkAtten)
		}
	case down:
		clear(played) // the device is gone: nothing plays
	}
	spk16 := b.spk*NearRate/FarRate + b.lead
	b.path.Play(spk16, played, FarRate)
	b.echo.Play(spk16, played, FarRate)
	b.spk += int64(n)
	copy(dst, b.near[at:at+micFrame])
	idx := int64(at)
	b.path.Capture(idx, dst)
	clear(b.echoBuf)
	b.echo.Capture(idx, b.echoBuf)
	b.lost = false
	for _, g := range b.gaps {
		if g[0] < at+micFrame && g[1] > at {
			clear(dst[max(g[0]-at, 0):min(g[1]-at, micFrame)])
			b.lost = b.reportLost
		}
	}
	copy(b.echoTL[at:], b.echoBuf)
	copy(b.micTL[at:], dst)
	b.pos += len(dst)
	b.clk.Advance(b.t0 + time.Duration(float64(b.pos)*b.ratio*float64(time.Second)/NearRate) - b.clk.Mono()) // 20 ms without SpeakerClock
	b.simCPU += (c1 - c0) + (threadCPU() - c2)
	return len(dst), nil
}

// deviceOut is the bench's speaker below the reference tap: it keeps the
// block last written for the room to play.
type deviceOut struct {
	*aec.Tap
	last []int16
}

func (d *deviceOut) Write(p []int16) error {
	d.last = p
	return d.Tap.Write(p)
}

// teeSource keeps what the canceller produced.
type teeSource struct {
	hw.AudioSource
	out []int16
	pos int
	// dec records the source's decision frames (aec.Source.DecisionFrame:
	// the canceller's output with a linear uplink), dual whether there
	// were any.
	dec  []int16
	dual bool
	ds   interface{ DecisionFrame() []int16 }
	// guard records the onset guard's verdict per read (DUPLEX_TRACE).
	guard   []bool
	guardOf interface{ EchoDominated() bool }
}

// Unwrap returns the canceller's source: the pump finds its capabilities
// (Lost) through the tee, as the agent's pump finds them on it directly.
func (t *teeSource) Unwrap() hw.AudioSource { return t.AudioSource }

func (t *teeSource) Read(dst []int16) (int, error) {
	n, err := t.AudioSource.Read(dst)
	if n > 0 {
		copy(t.out[t.pos:], dst[:n])
		d := dst[:n]
		if t.ds != nil {
			if f := t.ds.DecisionFrame(); len(f) == n {
				d, t.dual = f, true
			}
		}
		copy(t.dec[t.pos:], d)
		if t.guardOf != nil && t.pos/n < len(t.guard) {
			t.guard[t.pos/n] = t.guardOf.EchoDominated()
		}
		t.pos += n
	}
	return n, err
}

type start struct {
	at    time.Duration // when the pump decided (clock at delivery)
	first time.Duration // capture time of the first delivered frame
}

// benchSink records the uplink.
type benchSink struct {
	clk       *clock.Fake
	t0        time.Duration
	uplink    []int16
	delivered []bool
	starts    []start
	scale     float64 // mic time per clock time (0: 1)
}

// micTime converts a clock time since t0 to the mic's time.
func (s *benchSink) micTime(t time.Duration) time.Duration {
	if s.scale == 0 {
		return t
	}
	return time.Duration(float64(t) * s.scale)
}

func (s *benchSink) SendMic(f *capture.Frame) bool {
	k := int((s.micTime(f.TS-s.t0) + frameMS*time.Millisecond/2) / (frameMS * time.Millisecond))
	if len(f.Samples) > 0 && k >= 0 {
		copy(s.uplink[min(k*micFrame, len(s.uplink)):], f.Samples)
		for len(s.delivered) <= k {
			s.delivered = append(s.delivered, false)
		}
		s.delivered[k] = true
	}
	if f.Flag == protocol.FlagStart {
		s.starts = append(s.starts, start{at: s.micTime(s.clk.Mono() - s.t0), first: s.micTime(f.TS - s.t0)})
	}
	return true
}
