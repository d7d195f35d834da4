//go:build portaudio && cgo

package portaudio

/*
#include <stdlib.h>
#include "ring.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/robot-agent/robot-agent/codec/resample"
)

// This file measures the three ways of handing audio from Go to the
// device (docs/audio.md, "Device hand-off"), for BenchmarkHandoff:
//
//   - "cring" (what Sink does): Go writes a C ring; a C callback reads it.
//     Device-side lateness = how long the callback ran (it never waits for
//     Go); the Go feeder's own lateness is absorbed by the ring's lead.
//   - "gocallback": the PortAudio callback calls into Go (cgo callback),
//     which computes the period. Lateness = time from the C callback's
//     entry to its return, i.e. how long the device thread waited for Go.
//     Like cring, its thread asks for real-time scheduling; that cannot help
//     once it needs a P from the Go scheduler.
//   - "blocking": a goroutine locked to its OS thread calls
//     Pa_WriteStream. Lateness = time from one Pa_WriteStream returning
//     (room in the device buffer) to the next call.
//
// Each design computes the same audio: a source callback (the player's
// Fill in the benchmark) at srcRate, resampled and upmixed for the device.

// handoffResult is one design's measurement.
type handoffResult struct {
	Design string
	// Lateness of the device side, one sample per period.
	Lateness []time.Duration
	// FeederLate (cring only): how much later than asked the Go feeder
	// woke; the ring's lead must cover its maximum.
	FeederLate []time.Duration
	// Underruns: device periods that went short of audio (ring underruns
	// for cring; PortAudio underflow flags or errors for the others).
	Underruns uint64
	Periods   int
}

// handoffParams is what every design shares.
type handoffParams struct {
	dev      Device
	rate, ch int
	period   int // device frames per callback
	latency  time.Duration
	leadMS   int // cring: the Sink's BufferMS
	srcRate  int
	fill     func([]int16) // mono source at srcRate; called by exactly one thread at a time
	duration time.Duration
}

// converter turns source audio into interleaved device frames.
type converter struct {
	p    handoffParams
	rs   *resample.Resampler
	src  []int16
	mono []int16
	fifo []int16 // interleaved device frames
	n    int     // frames in fifo
}

func newConverter(p handoffParams) (*converter, error) {
	rs, err := resample.New(p.srcRate, p.rate, resample.QualityDefault)
	if err != nil {
		return nil, err
	}
	chunk := p.srcRate / 100
	c := &converter{p: p, rs: rs, src: make([]int16, chunk), mono: make([]int16, rs.OutLen(chunk)+1)}
	c.fifo = make([]int16, (p.period+len(c.mono))*p.ch*2)
	return c, nil
}

// produce fills out (interleaved) with exactly len(out)/ch frames.
func (c *converter) produce(out []int16) {
	ch := c.p.ch
	want := len(out) / ch
	for c.n < want {
		c.p.fill(c.src)
		m := c.rs.Process(c.mono, c.src)
		resample.Upmix(c.fifo[c.n*ch:], c.mono[:m], ch)
		c.n += m
	}
	copy(out, c.fifo[:want*ch])
	copy(c.fifo, c.fifo[want*ch:c.n*ch])
	c.n -= want
}

func latencies(ns []C.int64_t, n uint64) []time.Duration {
	k := min(n, uint64(len(ns)))
	out := make([]time.Duration, 0, k)
	for i := uint64(0); i < k; i++ {
		out = append(out, time.Duration(ns[i]))
	}
	return out
}

// measureCRing runs the Sink design: a C ring with a C callback, fed by a
// Go goroutine writing converted audio and sleeping while the lead is
// queued (the loop of Sink.Write).
func measureCRing(p handoffParams) (handoffResult, error) {
	res := handoffResult{Design: "cring"}
	conv, err := newConverter(p)
	if err != nil {
		return res, err
	}
	lead := p.rate * p.leadMS / 1000
	be := paBackend{}
	r, err := be.newRing(true, nextPow2(lead+4*p.period), p.ch, max(1, p.rate*4/1000), lead)
	if err != nil {
		return res, err
	}
	cr := r.(*cRing)
	defer cr.free()
	capN := int(p.duration/time.Second+2) * p.rate / p.period
	if C.ra_ring_enable_lateness(cr.r, C.uint32_t(capN)) != 0 {
		return res, errors.New("portaudio: no memory for the lateness log")
	}
	r.prime()
	st, err := be.open(p.dev, true, streamParams{rate: p.rate, channels: p.ch, periodFrames: p.period, latency: p.latency, realtime: true}, r)
	if err != nil {
		return res, err
	}
	if err := st.start(); err != nil {
		st.close()
		return res, err
	}
	buf := make([]int16, p.period*p.ch)
	late := make([]time.Duration, 0, capN)
	deadline := time.Now().Add(p.duration)
	timer := time.NewTimer(time.Hour)
	for time.Now().Before(deadline) {
		if space := lead - r.buffered(); space >= p.period {
			conv.produce(buf)
			r.write(buf, r.flushGen())
			continue
		}
		deficit := p.period - max(lead-r.buffered(), 0)
		d := max(time.Duration(deficit)*time.Second/time.Duration(p.rate), time.Millisecond)
		t0 := time.Now()
		timer.Reset(d)
		<-timer.C
		late = append(late, time.Since(t0)-d)
	}
	st.close()
	s := r.stats()
	res.Lateness = latencies(unsafe.Slice(cr.r.lat, capN), uint64(cr.r.lat_n))
	res.FeederLate = late
	res.Underruns = s.underrunCallbacks
	res.Periods = int(s.callbacks)
	return res, nil
}

// measureGoCallback runs the callback-into-Go design.
func measureGoCallback(p handoffParams) (handoffResult, error) {
	res := handoffResult{Design: "gocallback"}
	conv, err := newConverter(p)
	if err != nil {
		return res, err
	}
	capN := int(p.duration/time.Second+2) * p.rate / p.period
	g := (*C.ra_gocb)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ra_gocb{}))))
	defer C.free(unsafe.Pointer(g))
	g.lat = (*C.int64_t)(C.calloc(C.size_t(capN), 8))
	defer C.free(unsafe.Pointer(g.lat))
	g.lat_cap = C.uint32_t(capN)
	h := cgo.NewHandle(func(out []int16) { conv.produce(out) })
	defer h.Delete()
	g.handle = C.uintptr_t(h)
	g.channels = C.int(p.ch)
	var s unsafe.Pointer
	if err := paError(C.ra_open_gocb(&s, C.int(p.dev.Index), C.int(p.ch), C.double(p.rate), C.ulong(p.period), C.double(p.latency.Seconds()), 1, g)); err != nil {
		return res, fmt.Errorf("portaudio: open: %w", err)
	}
	if err := paError(C.Pa_StartStream(s)); err != nil {
		C.Pa_CloseStream(s)
		return res, err
	}
	time.Sleep(p.duration)
	C.Pa_AbortStream(s)
	C.Pa_CloseStream(s)
	res.Lateness = latencies(unsafe.Slice(g.lat, capN), uint64(g.lat_n))
	res.Underruns = uint64(g.xruns)
	res.Periods = int(g.lat_n)
	return res, nil
}

// raGoFill is the Go side of the "gocallback" design: ra_gocb_callback
// calls it on PortAudio's thread for every period.
//
//export raGoFill
func raGoFill(handle C.uintptr_t, out unsafe.Pointer, frames C.int, channels C.int) {
	f := cgo.Handle(handle).Value().(func([]int16))
	f(unsafe.Slice((*int16)(out), int(frames)*int(channels)))
}

// measureBlocking runs the blocking-write design on a goroutine locked to
// its OS thread.
func measureBlocking(p handoffParams) (handoffResult, error) {
	res := handoffResult{Design: "blocking"}
	conv, err := newConverter(p)
	if err != nil {
		return res, err
	}
	var s unsafe.Pointer
	if err := paError(C.ra_open_blocking(&s, C.int(p.dev.Index), C.int(p.ch), C.double(p.rate), C.ulong(p.period), C.double(p.latency.Seconds()))); err != nil {
		return res, fmt.Errorf("portaudio: open: %w", err)
	}
	defer C.Pa_CloseStream(s)
	if err := paError(C.Pa_StartStream(s)); err != nil {
		return res, err
	}
	defer C.Pa_AbortStream(s)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cbuf := (*C.int16_t)(C.calloc(C.size_t(p.period*p.ch), 2))
	defer C.free(unsafe.Pointer(cbuf))
	buf := unsafe.Slice((*int16)(unsafe.Pointer(cbuf)), p.period*p.ch)
	var call, ret, prevRet C.int64_t
	deadline := time.Now().Add(p.duration)
	for time.Now().Before(deadline) {
		conv.produce(buf)
		e := C.ra_write_blocking(s, cbuf, C.ulong(p.period), &call, &ret)
		if prevRet != 0 {
			res.Lateness = append(res.Lateness, time.Duration(call-prevRet))
		}
		prevRet = ret
		res.Periods++
		if e == C.paOutputUnderflowed {
			res.Underruns++
		} else if e != C.paNoError {
			return res, paError(e)
		}
	}
	return res, nil
}

// loadGenerator saturates every P with spinning goroutines and keeps the
// garbage collector busy with pointer-rich allocation until stop.
type loadGenerator struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	Sink atomic.Uint64
}

type churnNode struct {
	next *churnNode
	pad  [48]byte
}

func startLoad(ctx context.Context) *loadGenerator {
	l := &loadGenerator{}
	for range runtime.GOMAXPROCS(0) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			x := uint64(1)
			for !l.stop.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			l.Sink.Add(x)
		}()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		var keep [64]*churnNode
		for i := 0; !l.stop.Load(); i++ {
			var head *churnNode
			for range 20000 {
				head = &churnNode{next: head}
			}
			keep[i%len(keep)] = head // ~64 MB of linked lists live: marking work
		}
	}()
	go func() { <-ctx.Done(); l.stop.Store(true) }()
	return l
}

func (l *loadGenerator) Stop() { l.stop.Store(true); l.wg.Wait() }

// percentile returns the nearest-rank p-th percentile of d (sorted copy).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
