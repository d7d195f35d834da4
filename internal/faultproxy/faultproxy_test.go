package faultproxy

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// sink is a TCP server that counts what it receives and echoes it.
type sink struct {
	ln   net.Listener
	got  atomic.Int64
	echo bool
}

func newSink(t *testing.T, echo bool) *sink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln, echo: echo}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					s.got.Add(int64(n))
					if n > 0 && s.echo {
						c.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func setup(t *testing.T, echo bool) (*sink, *Proxy, net.Conn) {
	s := newSink(t, echo)
	p, err := New(s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, p, c
}

func roundTrip(t *testing.T, c net.Conn, msg []byte) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("echo differs")
	}
	return time.Since(start)
}

func TestPassThroughAndDelay(t *testing.T) {
	_, p, c := setup(t, true)
	roundTrip(t, c, []byte("hello"))
	p.SetDelay(100*time.Millisecond, 50*time.Millisecond)
	if d := roundTrip(t, c, []byte("slow")); d < 200*time.Millisecond {
		t.Fatalf("round trip %v with 100 ms each way", d)
	}
	p.Heal()
	if d := roundTrip(t, c, []byte("fast")); d > 150*time.Millisecond {
		t.Fatalf("round trip %v after heal", d)
	}
}

func TestKillAll(t *testing.T) {
	_, p, c := setup(t, true)
	roundTrip(t, c, []byte("x"))
	if n := p.KillAll(); n != 1 {
		t.Fatalf("killed %d", n)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after kill succeeded")
	}
}

func TestBlackHoleStallsSender(t *testing.T) {
	s, p, c := setup(t, false)
	p.BlackHole(true)
	time.Sleep(20 * time.Millisecond)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	var sent int
	buf := make([]byte, 4096)
	for {
		n, err := c.Write(buf)
		sent += n
		if err != nil {
			break
		}
		if sent > 64<<20 {
			t.Fatal("64 MiB written into a black hole without blocking")
		}
	}
	if s.got.Load() != 0 {
		t.Fatalf("target got %d bytes through a black hole", s.got.Load())
	}
	p.BlackHole(false)
	deadline := time.Now().Add(5 * time.Second)
	for s.got.Load() < int64(sent) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.got.Load() != int64(sent) {
		t.Fatalf("after the black hole: %d of %d bytes", s.got.Load(), sent)
	}
}

func TestDiscardAndStopDirection(t *testing.T) {
	s, p, c := setup(t, true)
	p.Discard(Up, true)
	c.Write([]byte("lost"))
	time.Sleep(100 * time.Millisecond)
	if s.got.Load() != 0 {
		t.Fatal("discarded bytes arrived")
	}
	p.Discard(Up, false)
	p.StopDirection(Down, true)
	c.Write([]byte("ping"))
	time.Sleep(100 * time.Millisecond)
	if s.got.Load() != 4 {
		t.Fatalf("up direction got %d bytes, want 4", s.got.Load())
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _ := c.Read(make([]byte, 4)); n != 0 {
		t.Fatal("stopped down direction delivered")
	}
	p.StopDirection(Down, false)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("after resume: %q %v", got, err)
	}
}

func TestBandwidthCap(t *testing.T) {
	_, p, c := setup(t, true)
	p.SetBandwidth(32 << 10)
	if d := roundTrip(t, c, make([]byte, 16<<10)); d < 400*time.Millisecond {
		t.Fatalf("16 KiB at 32 KiB/s took %v", d)
	}
}

func TestRefuse(t *testing.T) {
	_, p, _ := setup(t, true)
	p.Refuse(true)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		return
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("refused connection delivered data")
	}
}
