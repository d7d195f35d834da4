package duplex

import (
	"context"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/room"
)

func contextBackground() context.Context { return context.Background() }

// nullSink is the bench's speaker: the room gets the audio separately.
// Its device latency is one frame: Tap then places a block's first sample
// at the clock time of its Write (the block plays during the next frame).
type nullSink struct{}

func (nullSink) Format() hw.AudioFormat       { return hw.TTSFormat }
func (nullSink) Write([]int16) error          { return nil }
func (nullSink) Close() error                 { return nil }
func (nullSink) DeviceLatency() time.Duration { return frameMS * time.Millisecond }

// benchSource is the simulated mic. Each Read of one frame at clock time t
// plays the far end's frame [t, t+20 ms) through the speaker tap and the
// room, captures the mic (near end + echo + noise) for the same stretch,
// and advances the clock by the frame.
type benchSource struct {
	clk        *clock.Fake
	t0         time.Duration
	path, echo *room.Path
	tap        *aec.Tap
	far        []int16
	farStarts  []int
	replyLen   int
	near       []int16
	total, pos int

	mic, farBuf, echoBuf []int16
	echoTL, micTL        []int16
	simCPU               time.Duration
}

func (b *benchSource) Format() hw.AudioFormat { return hw.MicFormat }
func (b *benchSource) Close() error           { return nil }

func (b *benchSource) farFrame(at int) {
	clear(b.farBuf)
	for _, st := range b.farStarts {
		if at >= st && at < st+b.replyLen {
			off := (at - st) * FarRate / NearRate
			copy(b.farBuf, b.far[min(off, len(b.far)):])
			return
		}
	}
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
	b.farFrame(at)
	c1 := threadCPU()
	b.tap.Write(b.farBuf) // chain: the reference
	c2 := threadCPU()
	idx := int64(at)
	b.path.Play(idx, b.farBuf, FarRate)
	b.echo.Play(idx, b.farBuf, FarRate)
	copy(dst, b.near[at:at+micFrame])
	b.path.Capture(idx, dst)
	clear(b.echoBuf)
	b.echo.Capture(idx, b.echoBuf)
	copy(b.echoTL[at:], b.echoBuf)
	copy(b.micTL[at:], dst)
	b.pos += len(dst)
	b.clk.Advance(frameMS * time.Millisecond)
	b.simCPU += (c1 - c0) + (threadCPU() - c2)
	return len(dst), nil
}

// teeSource keeps what the canceller produced.
type teeSource struct {
	hw.AudioSource
	out []int16
	pos int
}

func (t *teeSource) Read(dst []int16) (int, error) {
	n, err := t.AudioSource.Read(dst)
	if n > 0 {
		copy(t.out[t.pos:], dst[:n])
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
}

func (s *benchSink) SendMic(f *capture.Frame) bool {
	k := int((f.TS - s.t0) / (frameMS * time.Millisecond))
	if len(f.Samples) > 0 && k >= 0 {
		copy(s.uplink[min(k*micFrame, len(s.uplink)):], f.Samples)
		for len(s.delivered) <= k {
			s.delivered = append(s.delivered, false)
		}
		s.delivered[k] = true
	}
	if f.Flag == protocol.FlagStart {
		s.starts = append(s.starts, start{at: s.clk.Mono() - s.t0, first: f.TS - s.t0})
	}
	return true
}
