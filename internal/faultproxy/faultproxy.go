// Package faultproxy is a TCP proxy for fault-injection tests: it sits
// between the robot and the gateway and can kill connections, black-hole
// them (stop reading, so the sender's window closes), read and discard,
// stop one direction, add delay and jitter, cap bandwidth, and refuse new
// connections. Faults apply to live and new connections at once.
//
// It is a test tool (internal): no production code imports it.
//
// # Concurrency
//
// Every method may be called from any goroutine.
package faultproxy

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Direction is one half of a proxied connection.
type Direction int

// Directions.
const (
	Up   Direction = iota // client (robot) → target (gateway)
	Down                  // target → client
)

// Proxy is a fault-injecting TCP proxy.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	links   map[*link]struct{}
	stopped [2]bool // direction not read (black hole)
	discard [2]bool // direction read and dropped
	delay   time.Duration
	jitter  time.Duration
	rate    int // bytes/s per direction, 0 = unlimited
	refuse  bool

	accepted, killed atomic.Int64
	bytes            [2]atomic.Int64
	wg               sync.WaitGroup
}

type link struct{ a, b net.Conn }

// New listens on a free loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, links: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted returns how many connections the proxy accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Bytes returns the bytes forwarded in direction d.
func (p *Proxy) Bytes(d Direction) int64 { return p.bytes[d].Load() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			reset(c)
			continue
		}
		t, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			reset(c)
			continue
		}
		// Kernel buffers stay at their defaults: shrinking the receive
		// buffer below the loopback MSS stalls window updates after a
		// zero window (the sender falls back to persist probes).
		l := &link{a: c, b: t}
		p.mu.Lock()
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.accepted.Add(1)
		p.wg.Add(2)
		go p.pump(l, Up, c, t)
		go p.pump(l, Down, t, c)
	}
}

type chunk struct {
	at   time.Time
	data []byte
}

// pump forwards src → dst for one direction, applying the faults.
func (p *Proxy) pump(l *link, d Direction, src, dst net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 64)
	done := make(chan struct{})
	go func() { // writer: delay, jitter, bandwidth
		defer close(done)
		for c := range q {
			if w := time.Until(c.at); w > 0 {
				time.Sleep(w)
			}
			if _, err := dst.Write(c.data); err != nil {
				p.drop(l)
				for range q {
				}
				return
			}
			p.bytes[d].Add(int64(len(c.data)))
			p.mu.Lock()
			rate := p.rate
			p.mu.Unlock()
			if rate > 0 {
				time.Sleep(time.Duration(len(c.data)) * time.Second / time.Duration(rate))
			}
		}
	}()
	var last time.Time
	for {
		p.mu.Lock()
		stopped, discard, delay, jitter, rate := p.stopped[d], p.discard[d], p.delay, p.jitter, p.rate
		p.mu.Unlock()
		if stopped {
			// Do not read: the kernel buffers fill and the sender's
			// window closes (zero window).
			if p.isDropped(l) {
				break
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		n := 4096
		if rate > 0 {
			n = min(n, max(rate/50, 64))
		}
		buf := make([]byte, n)
		src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		k, err := src.Read(buf)
		if k > 0 {
			// Faults set while the read was pending apply to its data.
			for {
				p.mu.Lock()
				stopped, discard, delay, jitter = p.stopped[d], p.discard[d], p.delay, p.jitter
				p.mu.Unlock()
				if !stopped || p.isDropped(l) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if k > 0 && !discard {
			at := time.Now().Add(delay)
			if jitter > 0 {
				at = at.Add(time.Duration(rand.Int64N(int64(jitter))))
			}
			if at.Before(last) {
				at = last // TCP delivers in order: jitter never reorders
			}
			last = at
			q <- chunk{at, buf[:k]}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, io.EOF) {
				// Half close: pass it on once queued data is out.
				close(q)
				<-done
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				return
			}
			break
		}
	}
	close(q)
	<-done
	p.drop(l)
}

func (p *Proxy) isDropped(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.links[l]
	return !ok
}

func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	_, ok := p.links[l]
	delete(p.links, l)
	p.mu.Unlock()
	if ok {
		l.a.Close()
		l.b.Close()
	}
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// KillAll resets every live connection (both sides see a connection reset)
// and returns how many there were.
func (p *Proxy) KillAll() int {
	p.mu.Lock()
	ls := make([]*link, 0, len(p.links))
	for l := range p.links {
		ls = append(ls, l)
		delete(p.links, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		reset(l.a)
		reset(l.b)
	}
	p.killed.Add(int64(len(ls)))
	return len(ls)
}

// BlackHole stops (on) or resumes reading both directions: packets are not
// consumed, windows close, no error is seen by either side.
func (p *Proxy) BlackHole(on bool) { p.set(func() { p.stopped = [2]bool{on, on} }) }

// StopDirection stops reading one direction only (on) or resumes it.
func (p *Proxy) StopDirection(d Direction, on bool) { p.set(func() { p.stopped[d] = on }) }

// Discard makes the proxy read and drop direction d (on): the sender sees a
// healthy socket, the receiver nothing.
func (p *Proxy) Discard(d Direction, on bool) { p.set(func() { p.discard[d] = on }) }

// SetDelay delays every chunk by delay plus uniform(0, jitter), keeping
// order.
func (p *Proxy) SetDelay(delay, jitter time.Duration) {
	p.set(func() { p.delay, p.jitter = delay, jitter })
}

// SetBandwidth caps each direction at bytesPerSec (0: unlimited).
func (p *Proxy) SetBandwidth(bytesPerSec int) { p.set(func() { p.rate = bytesPerSec }) }

// Refuse makes new connections fail with a reset (on), as when the gateway
// is down behind a load balancer.
func (p *Proxy) Refuse(on bool) { p.set(func() { p.refuse = on }) }

// Heal clears every fault.
func (p *Proxy) Heal() {
	p.set(func() {
		p.stopped, p.discard = [2]bool{}, [2]bool{}
		p.delay, p.jitter, p.rate, p.refuse = 0, 0, 0, false
	})
}

func (p *Proxy) set(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
}

// Close stops the proxy and every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.KillAll()
	p.wg.Wait()
	return err
}
