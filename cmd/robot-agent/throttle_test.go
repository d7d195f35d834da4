package main

import (
	"context"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// throttleProxy is a TCP proxy on loopback whose robot → gateway direction
// is limited to rate bytes per second (gateway → robot is not limited): a
// slow uplink. It keeps its own buffering small (4 KiB reads, a 4 KiB
// socket receive buffer) so the queue builds up on the robot's side, as
// on a real slow link.
type throttleProxy struct {
	ln     net.Listener
	target string
	rate   float64

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startThrottleProxy(t *testing.T, target string, rate float64) *throttleProxy {
	t.Helper()
	// A small receive buffer set on the listener, so accepted connections
	// advertise a small window from the start: little data in flight.
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &throttleProxy{ln: ln, target: target, rate: rate}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *throttleProxy) addr() string { return p.ln.Addr().String() }

func (p *throttleProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		g, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, g)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); p.pipeLimited(g, c); g.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, g); c.Close() }()
	}
}

// pipeLimited copies src to dst at p.rate bytes per second, with bursts
// of at most one 4 KiB read after an idle spell.
func (p *throttleProxy) pipeLimited(dst, src net.Conn) {
	buf := make([]byte, 4<<10)
	burst := time.Duration(float64(len(buf)) / p.rate * float64(time.Second))
	next := time.Now()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if floor := time.Now().Add(-burst); next.Before(floor) {
				next = floor
			}
			next = next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
			time.Sleep(time.Until(next))
		}
		if err != nil {
			return
		}
	}
}

func (p *throttleProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
