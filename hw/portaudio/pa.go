//go:build portaudio && cgo

package portaudio

/*
#cgo pkg-config: portaudio-2.0
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "ring.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	pa "github.com/gordonklaus/portaudio"
)

// BuiltIn reports whether this binary was built with PortAudio support.
const BuiltIn = true

// paBackend is the real PortAudio library: gordonklaus/portaudio for
// initialisation and enumeration, and a small C layer (ring.c) for the
// streams, whose callbacks never enter Go.
type paBackend struct{}

func newBackend() (backend, error) { return paBackend{}, nil }

func (paBackend) initialize() error {
	C.ra_quiet_libraries()
	if err := pa.Initialize(); err != nil {
		return fmt.Errorf("portaudio: initialize: %w", err)
	}
	return nil
}

func (paBackend) terminate() error {
	if err := pa.Terminate(); err != nil {
		return fmt.Errorf("portaudio: terminate: %w", err)
	}
	return nil
}

func (paBackend) devices() ([]Device, error) {
	devs, err := pa.Devices()
	if err != nil {
		return nil, fmt.Errorf("portaudio: listing devices: %w", err)
	}
	defIn, defOut := -1, -1
	if d, err := pa.DefaultInputDevice(); err == nil && d != nil {
		defIn = d.Index
	}
	if d, err := pa.DefaultOutputDevice(); err == nil && d != nil {
		defOut = d.Index
	}
	out := make([]Device, 0, len(devs))
	for _, d := range devs {
		host := ""
		if d.HostApi != nil {
			host = d.HostApi.Name
		}
		out = append(out, Device{
			Index: d.Index, Name: d.Name, HostAPI: host,
			MaxInputChannels: d.MaxInputChannels, MaxOutputChannels: d.MaxOutputChannels,
			DefaultSampleRate:        int(d.DefaultSampleRate + 0.5),
			DefaultLowInputLatency:   d.DefaultLowInputLatency,
			DefaultHighInputLatency:  d.DefaultHighInputLatency,
			DefaultLowOutputLatency:  d.DefaultLowOutputLatency,
			DefaultHighOutputLatency: d.DefaultHighOutputLatency,
			DefaultInput:             d.Index == defIn,
			DefaultOutput:            d.Index == defOut,
		})
	}
	return out, nil
}

func (paBackend) newRing(output bool, frames, channels, fade, lead int) (ring, error) {
	out := C.int(0)
	if output {
		out = 1
	}
	r := C.ra_ring_new(C.uint32_t(frames), C.uint32_t(channels), C.uint32_t(fade), out, C.uint32_t(lead))
	if r == nil {
		return nil, fmt.Errorf("portaudio: cannot allocate a ring of %d frames x %d channels", frames, channels)
	}
	return &cRing{r: r, ch: channels}, nil
}

func paError(e C.PaError) error {
	if e == C.paNoError {
		return nil
	}
	return errors.New(C.GoString(C.Pa_GetErrorText(e)))
}

func (paBackend) open(d Device, output bool, p streamParams, r ring) (stream, error) {
	cr, ok := r.(*cRing)
	if !ok {
		return nil, errors.New("portaudio: ring from another backend")
	}
	var s unsafe.Pointer
	rt := C.int(max(p.realtimePriority, 0))
	e := C.ra_open(&s, C.int(d.Index), C.int(p.channels), C.double(p.rate), C.ulong(p.periodFrames),
		C.double(p.latency.Seconds()), rt, cr.r)
	if err := paError(e); err != nil {
		return nil, fmt.Errorf("portaudio: opening %s %q at %d Hz x %d ch: %w", direction(output), d.Name, p.rate, p.channels, err)
	}
	return &cStream{s: s, output: output}, nil
}

// fingerprint lists the ALSA cards and device nodes: they change when a
// USB sound device comes or goes, long before anyone asks PortAudio.
func (paBackend) fingerprint() string {
	var b strings.Builder
	if cards, err := os.ReadFile("/proc/asound/cards"); err == nil {
		b.Write(cards)
	}
	if ents, err := os.ReadDir("/dev/snd"); err == nil {
		for _, e := range ents {
			b.WriteString(e.Name())
			b.WriteByte(' ')
		}
	}
	return b.String()
}

type cStream struct {
	s      unsafe.Pointer
	output bool
}

func (s *cStream) start() error {
	if err := paError(C.Pa_StartStream(s.s)); err != nil {
		return fmt.Errorf("portaudio: starting %s stream: %w", direction(s.output), err)
	}
	return nil
}

func (s *cStream) close() error {
	if s.s == nil {
		return nil
	}
	// Abort rather than stop: do not wait for buffered output to drain
	// from a device that may be gone.
	C.Pa_AbortStream(s.s)
	err := paError(C.Pa_CloseStream(s.s))
	s.s = nil
	if err != nil {
		return fmt.Errorf("portaudio: closing %s stream: %w", direction(s.output), err)
	}
	return nil
}

func (s *cStream) latency() time.Duration {
	out := C.int(0)
	if s.output {
		out = 1
	}
	return time.Duration(float64(C.ra_stream_latency(s.s, out)) * float64(time.Second))
}

// cRing is a ra_ring in C memory.
type cRing struct {
	r  *C.ra_ring
	ch int
	// Supervisor-owned: where timings continues, and a C buffer for it.
	timFrom C.uint64_t
	timBuf  *C.ra_timing
}

// timBufLen is how many callback records timings copies per C call.
const timBufLen = 256

func (r *cRing) write(p []int16, gen uint32) int {
	n := len(p) / r.ch
	if n == 0 {
		return 0
	}
	return int(C.ra_write(r.r, (*C.int16_t)(unsafe.Pointer(&p[0])), C.uint32_t(n), C.uint32_t(gen)))
}

func (r *cRing) read(p []int16) int {
	n := len(p) / r.ch
	if n == 0 {
		return 0
	}
	return int(C.ra_read(r.r, (*C.int16_t)(unsafe.Pointer(&p[0])), C.uint32_t(n)))
}

func (r *cRing) buffered() int    { return int(C.ra_buffered(r.r)) }
func (r *cRing) flush()           { C.ra_flush(r.r) }
func (r *cRing) flushGen() uint32 { return uint32(C.ra_flush_gen(r.r)) }
func (r *cRing) prime()           { C.ra_prime(r.r) }
func (r *cRing) drop()            { C.ra_drop(r.r) }

func (r *cRing) stats() ringStats {
	var s C.ra_stats
	C.ra_get_stats(r.r, &s)
	return ringStats{
		callbacks: uint64(s.callbacks), underrunCallbacks: uint64(s.underrun_cbs),
		underrunFrames: uint64(s.underrun_frames), overrunFrames: uint64(s.overrun_frames), xruns: uint64(s.xruns),
		rtResult: int32(s.rt_result),
	}
}

func goTiming(t *C.ra_timing) CallbackTiming {
	return CallbackTiming{
		Start: time.Duration(t.start_ns), Current: float64(t.current), BufferTime: float64(t.buf_time),
		Frames: int(t.frames), Flags: uint32(t.flags), Buffered: int(t.buffered), Dry: int(t.dry),
	}
}

func (r *cRing) timings(dst []CallbackTiming) (int, uint64) {
	if r.timBuf == nil {
		r.timBuf = (*C.ra_timing)(C.calloc(timBufLen, C.size_t(unsafe.Sizeof(C.ra_timing{}))))
		if r.timBuf == nil {
			return 0, 0
		}
	}
	buf := unsafe.Slice(r.timBuf, timBufLen)
	n, lost := 0, uint64(0)
	for n < len(dst) {
		var l C.uint64_t
		k := int(C.ra_timing_read(r.r, &r.timFrom, r.timBuf, C.uint32_t(min(len(dst)-n, timBufLen)), &l))
		lost += uint64(l)
		for i := range k {
			dst[n+i] = goTiming(&buf[i])
		}
		n += k
		if k == 0 {
			break
		}
	}
	return n, lost
}

func (r *cRing) last() (CallbackTiming, time.Duration, bool) {
	var t C.ra_timing
	if C.ra_timing_last(r.r, &t) == 0 {
		return CallbackTiming{}, 0, false
	}
	return goTiming(&t), time.Duration(C.ra_now_ns()), true
}

func (r *cRing) free() {
	if r.r != nil {
		C.ra_ring_free(r.r)
		r.r = nil
	}
	if r.timBuf != nil {
		C.free(unsafe.Pointer(r.timBuf))
		r.timBuf = nil
	}
}

// render runs the output callback's logic on out (device side), for tests.
func (r *cRing) render(out []int16) {
	C.ra_out_render(r.r, (*C.int16_t)(unsafe.Pointer(&out[0])), C.uint32_t(len(out)/r.ch))
}

// setFlushFade caps the flush fade-out at frames (ra_open sets 4 ms), for
// tests.
func (r *cRing) setFlushFade(frames int) { C.ra_set_flush_fade(r.r, C.uint32_t(frames)) }

// renderTimed runs the output callback's logic on out and records its
// timing as the callback does, for tests.
func (r *cRing) renderTimed(out []int16, startNS int64, current, dac float64, flags uint32) int {
	frames := C.uint32_t(len(out) / r.ch)
	dry := C.ra_out_render(r.r, (*C.int16_t)(unsafe.Pointer(&out[0])), frames)
	ti := C.PaStreamCallbackTimeInfo{currentTime: C.PaTime(current), outputBufferDacTime: C.PaTime(dac)}
	C.ra_record_timing(r.r, C.int64_t(startNS), &ti, C.PaStreamCallbackFlags(flags), frames, dry)
	return int(dry)
}

// capture runs the input callback's logic on in (device side), for tests.
func (r *cRing) capture(in []int16) {
	C.ra_in_capture(r.r, (*C.int16_t)(unsafe.Pointer(&in[0])), C.uint32_t(len(in)/r.ch))
}

// Version is the PortAudio library's version text.
func Version() string { return pa.VersionText() }
