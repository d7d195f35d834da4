//go:build portaudio && cgo

package handoffbench

/*
#cgo pkg-config: portaudio-2.0
#include <stdlib.h>
#include "handoff.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/hw/portaudio"
)

// Params is what every design shares.
type Params struct {
	Dev      portaudio.Device
	Rate, Ch int
	Period   int           // device frames per period
	Latency  time.Duration // suggested device buffer
	LeadMS   int           // cring: the Sink's BufferMS
	Periods  int           // periods to measure (after the warm-up)
	Realtime int           // SCHED_FIFO priority of the device thread; 0: none
	// Minute, if set, is called with each completed minute's records
	// (soak mode).
	Minute func(i int, r Result)
}

// Result is one design's measurement.
type Result struct {
	Design string
	// Lateness of the start of each measured period against the device
	// cadence.
	Lateness []time.Duration
	// Jitter of the DAC time spacing (callback designs).
	Jitter []time.Duration
	// DeviceUnderflows: periods PortAudio flagged with an output underflow.
	DeviceUnderflows int
	// RingDry: cring periods the ring ran short of audio (Go side late).
	RingDry int
	// RealtimeGranted: whether the device thread got SCHED_FIFO.
	RealtimeGranted bool
	// Short: the device side did not get through the periods asked for
	// within twice their duration (plus 10 s); measured as far as it got.
	Short bool
}

// analyse runs the records through one portaudio.Cadence.
func analyse(res *Result, rate int, recs []portaudio.CallbackTiming) {
	c := portaudio.NewCadence(rate)
	for _, t := range recs {
		if t.DeviceUnderflow(true) {
			res.DeviceUnderflows++
		}
		if t.Dry > 0 {
			res.RingDry++
		}
		late, jit, hasJit, ok := c.Observe(t)
		if hasJit {
			res.Jitter = append(res.Jitter, jit)
		}
		if ok {
			res.Lateness = append(res.Lateness, late)
		}
	}
}

// wanted is how many records to collect: the periods plus the warm-up.
func (p Params) wanted() int {
	return p.Periods + int(portaudio.DefaultCadenceWarmup.Seconds()*float64(p.Rate)/float64(p.Period)) + 2
}

func (p Params) duration() time.Duration {
	return time.Duration(p.wanted()) * time.Duration(p.Period) * time.Second / time.Duration(p.Rate)
}

// tone fills dst with a 440 Hz tone at 24 kHz (the TTS rate).
type tone struct{ phase int }

func (t *tone) fill(dst []int16) {
	for i := range dst {
		dst[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(t.phase)/24000))
		t.phase++
	}
}

// converter turns the 24 kHz tone into interleaved device frames, as the
// Sink's Write does (resample, upmix).
type converter struct {
	ch   int
	src  tone
	rs   *resample.Resampler
	in   []int16
	mono []int16
	fifo []int16
	n    int
}

func newConverter(p Params) (*converter, error) {
	rs, err := resample.New(24000, p.Rate, resample.QualityDefault)
	if err != nil {
		return nil, err
	}
	c := &converter{ch: p.Ch, rs: rs, in: make([]int16, 240), mono: make([]int16, rs.OutLen(240)+1)}
	c.fifo = make([]int16, (p.Period+len(c.mono))*p.Ch*2)
	return c, nil
}

func (c *converter) produce(out []int16) {
	want := len(out) / c.ch
	for c.n < want {
		c.src.fill(c.in)
		m := c.rs.Process(c.mono, c.in)
		resample.Upmix(c.fifo[c.n*c.ch:], c.mono[:m], c.ch)
		c.n += m
	}
	copy(out, c.fifo[:want*c.ch])
	copy(c.fifo, c.fifo[want*c.ch:c.n*c.ch])
	c.n -= want
}

// Recorder keeps the output callback records a portaudio.Host hands to
// its Timing hook (HostConfig.Timing = r.Hook) while on.
type Recorder struct {
	mu   sync.Mutex
	on   bool
	recs []portaudio.CallbackTiming
}

// Hook is a portaudio.HostConfig.Timing function.
func (r *Recorder) Hook(output bool, t portaudio.CallbackTiming) {
	if !output {
		return
	}
	r.mu.Lock()
	if r.on {
		r.recs = append(r.recs, t)
	}
	r.mu.Unlock()
}

func (r *Recorder) start(n int) {
	r.mu.Lock()
	r.on, r.recs = true, make([]portaudio.CallbackTiming, 0, n)
	r.mu.Unlock()
}

func (r *Recorder) stop() {
	r.mu.Lock()
	r.on = false
	r.mu.Unlock()
}

// Len is how many records were taken.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recs)
}

// Slice returns a copy of records [from, to).
func (r *Recorder) Slice(from, to int) []portaudio.CallbackTiming {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs[from:min(to, len(r.recs))])
}

// MeasureCRing runs the real portaudio.Sink (opened by the caller on a
// Host whose Timing hook is rec.Hook), fed by a goroutine writing 10 ms
// blocks of 24 kHz audio.
func MeasureCRing(p Params, open func() (*portaudio.Sink, error), rec *Recorder) (Result, error) {
	res := Result{Design: "cring"}
	rec.start(p.wanted() + 1000)
	defer rec.stop()
	sink, err := open()
	if err != nil {
		return res, err
	}
	var src tone
	blk := make([]int16, 240)
	var stop atomic.Bool
	errc := make(chan error, 1)
	go func() {
		for !stop.Load() {
			src.fill(blk)
			if err := sink.Write(blk); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	err = collect(p, rec.Len, rec.Slice, &res)
	stop.Store(true)
	if werr := <-errc; err == nil {
		err = werr
	}
	sink.Close()
	rec.stop()
	analyse(&res, p.Rate, rec.Slice(0, rec.Len()))
	return res, err
}

// collect waits until p.wanted() records exist, calling p.Minute for each
// completed minute of them.
func collect(p Params, n func() int, slice func(from, to int) []portaudio.CallbackTiming, res *Result) error {
	deadline := time.Now().Add(2*p.duration() + 10*time.Second)
	perMin := int(time.Minute.Seconds() * float64(p.Rate) / float64(p.Period))
	minute := 0
	for n() < p.wanted() {
		if time.Now().After(deadline) {
			// The device side fell that far behind real time: report what
			// it managed (the table shows the period count).
			res.Short = true
			return nil
		}
		if p.Minute != nil && n() >= (minute+1)*perMin {
			var r Result
			r.Design = res.Design
			analyse(&r, p.Rate, slices.Clone(slice(minute*perMin, (minute+1)*perMin)))
			p.Minute(minute, r)
			minute++
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func fromC(recs []C.hb_rec) []portaudio.CallbackTiming {
	out := make([]portaudio.CallbackTiming, len(recs))
	for i, r := range recs {
		out[i] = portaudio.CallbackTiming{Start: time.Duration(r.start_ns), Current: float64(r.current), BufferTime: float64(r.dac),
			Frames: int(r.frames), Flags: uint32(r.flags)}
	}
	return out
}

func newLog(p Params) (*C.hb_log, []C.hb_rec, func()) {
	l := (*C.hb_log)(C.calloc(1, C.size_t(unsafe.Sizeof(C.hb_log{}))))
	n := p.wanted() + 1000
	l.rec = (*C.hb_rec)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.hb_rec{}))))
	l.cap = C.uint64_t(n)
	l.rt_prio = C.int(p.Realtime)
	return l, unsafe.Slice(l.rec, n), func() { C.free(unsafe.Pointer(l.rec)); C.free(unsafe.Pointer(l)) }
}

func logCount(l *C.hb_log) int {
	return int(atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.n))))
}

func paErr(e C.PaError) error {
	if e == C.paNoError {
		return nil
	}
	return errors.New(C.GoString(C.Pa_GetErrorText(e)))
}

// MeasureGoCallback runs the callback-into-Go design (PortAudio must be
// initialised, e.g. by an open portaudio.Host).
func MeasureGoCallback(p Params) (Result, error) {
	res := Result{Design: "gocallback"}
	conv, err := newConverter(p)
	if err != nil {
		return res, err
	}
	l, recs, free := newLog(p)
	defer free()
	h := cgo.NewHandle(conv)
	defer h.Delete()
	l.handle = C.uintptr_t(h)
	l.channels = C.int(p.Ch)
	var s unsafe.Pointer
	if err := paErr(C.hb_open_gocb(&s, C.int(p.Dev.Index), C.int(p.Ch), C.double(p.Rate), C.ulong(p.Period), C.double(p.Latency.Seconds()), l)); err != nil {
		return res, fmt.Errorf("handoffbench: open: %w", err)
	}
	if err := paErr(C.Pa_StartStream(s)); err != nil {
		C.Pa_CloseStream(s)
		return res, err
	}
	err = collect(p, func() int { return logCount(l) }, func(from, to int) []portaudio.CallbackTiming { return fromC(recs[from:to]) }, &res)
	C.Pa_AbortStream(s)
	C.Pa_CloseStream(s)
	res.RealtimeGranted = l.rt_result > 0
	analyse(&res, p.Rate, fromC(recs[:logCount(l)]))
	return res, err
}

// hbGoFill is the Go side of the gocallback design.
//
//export hbGoFill
func hbGoFill(handle C.uintptr_t, out unsafe.Pointer, frames C.int, channels C.int) {
	c := cgo.Handle(handle).Value().(*converter)
	c.produce(unsafe.Slice((*int16)(out), int(frames)*int(channels)))
}

// MeasureBlocking runs the blocking-write design on a goroutine locked to
// its OS thread (at SCHED_FIFO when p.Realtime is set; the thread ends
// with the goroutine, so the priority does not leak into the Go runtime).
func MeasureBlocking(p Params) (Result, error) {
	res := Result{Design: "blocking"}
	conv, err := newConverter(p)
	if err != nil {
		return res, err
	}
	l, recs, free := newLog(p)
	defer free()
	var s unsafe.Pointer
	if err := paErr(C.hb_open_blocking(&s, C.int(p.Dev.Index), C.int(p.Ch), C.double(p.Rate), C.ulong(p.Period), C.double(p.Latency.Seconds()))); err != nil {
		return res, fmt.Errorf("handoffbench: open: %w", err)
	}
	defer C.Pa_CloseStream(s)
	if err := paErr(C.Pa_StartStream(s)); err != nil {
		return res, err
	}
	defer C.Pa_AbortStream(s)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if p.Realtime > 0 {
			res.RealtimeGranted = C.hb_thread_realtime(C.int(p.Realtime)) == 0
		}
		cbuf := (*C.int16_t)(C.calloc(C.size_t(p.Period*p.Ch), 2))
		defer C.free(unsafe.Pointer(cbuf))
		buf := unsafe.Slice((*int16)(unsafe.Pointer(cbuf)), p.Period*p.Ch)
		for logCount(l) < p.wanted() {
			conv.produce(buf)
			e := C.hb_write_blocking(s, cbuf, C.ulong(p.Period), l)
			if e != C.paNoError && e != C.paOutputUnderflowed {
				errc <- paErr(e)
				return
			}
		}
		errc <- nil
	}()
	err = collect(p, func() int { return logCount(l) }, func(from, to int) []portaudio.CallbackTiming { return fromC(recs[from:to]) }, &res)
	if werr := <-errc; err == nil {
		err = werr
	}
	analyse(&res, p.Rate, fromC(recs[:logCount(l)]))
	return res, err
}

// Load saturates every P with spinning goroutines and keeps the garbage
// collector busy with pointer-rich allocation until Stop.
type Load struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	sink atomic.Uint64
}

type churnNode struct {
	next *churnNode
	pad  [48]byte
}

// StartLoad starts the load; ctx's end stops it too.
func StartLoad(ctx context.Context) *Load {
	l := &Load{}
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
			l.sink.Add(x)
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

// Stop ends the load and waits for it.
func (l *Load) Stop() { l.stop.Store(true); l.wg.Wait() }

// Percentile returns the nearest-rank p-th percentile of d.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[min(max(i, 0), len(s)-1)]
}
