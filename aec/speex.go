//go:build speexdsp && cgo

package aec

/*
#cgo pkg-config: speexdsp
#include <stdlib.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>

static SpeexEchoState* aec_speex_echo(int frame, int tail, int rate) {
	SpeexEchoState* st = speex_echo_state_init(frame, tail);
	if (st) speex_echo_ctl(st, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
	return st;
}
static SpeexPreprocessState* aec_speex_pre(int frame, int rate, SpeexEchoState* echo, int denoise, int agc) {
	SpeexPreprocessState* pp = speex_preprocess_state_init(frame, rate);
	if (!pp) return pp;
	speex_preprocess_ctl(pp, SPEEX_PREPROCESS_SET_ECHO_STATE, echo);
	speex_preprocess_ctl(pp, SPEEX_PREPROCESS_SET_DENOISE, &denoise);
	speex_preprocess_ctl(pp, SPEEX_PREPROCESS_SET_AGC, &agc);
	return pp;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

const speexBuiltIn = true

type speexAEC struct {
	st     *C.SpeexEchoState
	pp     *C.SpeexPreprocessState
	tmp    []int16 // preallocated: a stack array passed to C would escape
	linear bool    // Options.Uplink linear: keep tmp (before the preprocessor) for Linear
	gated  bool    // Options.Uplink linear-gated
	lin    []int16
}

func newSpeex(o Options) (Canceller, error) {
	tailMS := o.TailMS
	if tailMS == 0 {
		tailMS = DefaultTailMS
	}
	st := C.aec_speex_echo(FrameSamples, C.int(tailMS*Rate/1000), Rate)
	if st == nil {
		return nil, errors.New("aec: speex_echo_state_init failed")
	}
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	pp := C.aec_speex_pre(FrameSamples, Rate, st, b(o.NoiseSuppression), b(o.AGC))
	if pp == nil {
		C.speex_echo_state_destroy(st)
		return nil, errors.New("aec: speex_preprocess_state_init failed")
	}
	s := &speexAEC{st: st, pp: pp, tmp: make([]int16, FrameSamples)}
	if o.Uplink == UplinkLinear || o.Uplink == UplinkLinearGated {
		s.linear, s.lin, s.gated = true, make([]int16, FrameSamples), o.Uplink == UplinkLinearGated
	}
	return s, nil
}

// speexLinear is the MDF filter alone (no preprocessor): Options.Uplink
// linear beside another canceller.
type speexLinear struct {
	st *C.SpeexEchoState
}

func newSpeexLinear(tailMS int) (linearFilter, error) {
	st := C.aec_speex_echo(FrameSamples, C.int(tailMS*Rate/1000), Rate)
	if st == nil {
		return nil, errors.New("aec: speex_echo_state_init failed")
	}
	return &speexLinear{st: st}, nil
}

func (s *speexLinear) Process(out, near, far []int16) {
	_, _, _ = out[FrameSamples-1], near[FrameSamples-1], far[FrameSamples-1]
	C.speex_echo_cancellation(s.st, (*C.spx_int16_t)(unsafe.Pointer(&near[0])), (*C.spx_int16_t)(unsafe.Pointer(&far[0])), (*C.spx_int16_t)(unsafe.Pointer(&out[0])))
}

func (s *speexLinear) Reset() { C.speex_echo_state_reset(s.st) }

func (s *speexLinear) Close() error {
	if s.st != nil {
		C.speex_echo_state_destroy(s.st)
		s.st = nil
	}
	return nil
}

// Gated implements linearOuter.
func (s *speexAEC) Gated() bool { return s.gated }

// Linear implements linearOuter (Options.Uplink linear).
func (s *speexAEC) Linear() []int16 {
	if !s.linear {
		return nil
	}
	return s.lin
}

func (s *speexAEC) Kind() string { return KindSpeex }

func (s *speexAEC) Process(out, near, far []int16) {
	_, _ = near[FrameSamples-1], far[FrameSamples-1]
	_ = out[FrameSamples-1]
	tmp := s.tmp
	C.speex_echo_cancellation(s.st, (*C.spx_int16_t)(unsafe.Pointer(&near[0])), (*C.spx_int16_t)(unsafe.Pointer(&far[0])), (*C.spx_int16_t)(unsafe.Pointer(&tmp[0])))
	if s.linear {
		copy(s.lin, tmp)
	}
	// The preprocessor runs the residual-echo suppressor (and NS/AGC).
	C.speex_preprocess_run(s.pp, (*C.spx_int16_t)(unsafe.Pointer(&tmp[0])))
	copy(out, tmp)
}

func (s *speexAEC) Reset() { C.speex_echo_state_reset(s.st) }

func (s *speexAEC) Close() error {
	if s.pp != nil {
		C.speex_preprocess_state_destroy(s.pp)
		s.pp = nil
	}
	if s.st != nil {
		C.speex_echo_state_destroy(s.st)
		s.st = nil
	}
	return nil
}
