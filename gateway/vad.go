package gateway

import (
	"context"
	"sync"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
)

// serverVAD runs the robot's own capture pump (package capture, VAD mode)
// over the audio a robot streams in continuous mode: the received PCM is the
// pump's source, and the utterances it finds go to Session.segment as if the
// robot had flagged them.
type serverVAD struct {
	src  *pipeSource
	done chan struct{}
}

func newServerVAD(ctx context.Context, ss *Session) (*serverVAD, error) {
	src := newPipeSource()
	sink := segmentSink{ctx: ctx, ss: ss}
	pump, err := capture.NewPump(capture.Config{Mode: capture.ModeVAD}, src, sink, ss.srv.clk, nil, nil)
	if err != nil {
		return nil, err
	}
	v := &serverVAD{src: src, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		pump.Run(ctx)
	}()
	return v, nil
}

// feed hands received PCM16LE to the VAD (session read goroutine).
func (v *serverVAD) feed(pcmLE []byte) {
	samples := make([]int16, len(pcmLE)/2)
	pcm.BytesToInt16(samples, pcmLE)
	v.src.push(samples)
}

func (v *serverVAD) close() {
	v.src.Close()
	<-v.done
}

// segmentSink turns the pump's frames into Session.segment calls. The
// frame's samples are only valid during SendMic, so they are copied.
type segmentSink struct {
	ctx context.Context
	ss  *Session
}

func (k segmentSink) SendMic(f *capture.Frame) bool {
	k.ss.segment(k.ctx, f.Flag, f.Utterance, append([]int16(nil), f.Samples...))
	return true
}

// pipeSource is an hw.AudioSource fed by push: Read blocks until it has
// len(dst) samples or the pipe is closed.
type pipeSource struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []int16
	closed bool
}

func newPipeSource() *pipeSource {
	p := &pipeSource{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *pipeSource) push(pcm []int16) {
	p.mu.Lock()
	p.buf = append(p.buf, pcm...)
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *pipeSource) Format() hw.AudioFormat { return hw.MicFormat }

func (p *pipeSource) Read(dst []int16) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) < len(dst) && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return 0, hw.ErrClosed
	}
	n := copy(dst, p.buf)
	p.buf = append(p.buf[:0], p.buf[n:]...)
	return n, nil
}

func (p *pipeSource) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	return nil
}
