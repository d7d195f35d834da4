package jittertrace

import (
	"time"

	"github.com/pion/interceptor/pkg/jitterbuffer"
	"github.com/pion/rtp"
)

// pionPlayout drives pion/interceptor's jitterbuffer (the version pinned in
// go.mod) with the same frames: each frame is one RTP packet (sequence
// number, 24 kHz timestamp); every device period pops packets in sequence
// order as needed. Pion waits for its minimum packet count (default 50)
// before emitting, and on a missing packet returns an error without
// advancing, so playback stalls until that packet arrives.
type pionPlayout struct {
	jb  *jitterbuffer.JitterBuffer
	seq uint16
	ts  uint32
	q   []int16
	rd  int
	c   Counters
	out int64 // samples pushed not yet played (for Peak)
	und bool
}

func newPionPlayout() *pionPlayout { return &pionPlayout{jb: jitterbuffer.New()} }

func (p *pionPlayout) Push(_ time.Duration, pcm []int16) {
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		b[2*i], b[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	p.jb.Push(&rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: p.seq, Timestamp: p.ts}, Payload: b})
	p.seq++
	p.ts += uint32(len(pcm))
	p.out += int64(len(pcm))
	p.c.Peak = max(p.c.Peak, p.out)
}

func (p *pionPlayout) End(time.Duration) {}

func (p *pionPlayout) Fill(_ time.Duration, dst []int16) {
	started := p.c.Source > 0 || p.rd < len(p.q)
	for i := 0; i < len(dst); {
		if p.rd == len(p.q) {
			pkt, err := p.jb.Pop()
			if err != nil {
				clear(dst[i:])
				if started {
					p.c.Concealed += int64(len(dst) - i)
					if !p.und {
						p.c.Underruns++
					}
					p.und = true
				}
				return
			}
			p.q, p.rd = p.q[:0], 0
			for j := 0; j+1 < len(pkt.Payload); j += 2 {
				p.q = append(p.q, int16(uint16(pkt.Payload[j])|uint16(pkt.Payload[j+1])<<8))
			}
			started = true
		}
		n := copy(dst[i:], p.q[p.rd:])
		p.rd += n
		i += n
		p.c.Source += int64(n)
		p.out -= int64(n)
		p.und = false
	}
}

func (p *pionPlayout) Counters() Counters { return p.c }
