//go:build speexdsp && cgo

package vad

/*
#cgo pkg-config: speexdsp
#include <speex/speex_preprocess.h>
static SpeexPreprocessState* vad_speex_new(int frame, int start, int cont) {
	SpeexPreprocessState* st = speex_preprocess_state_init(frame, 16000);
	if (!st) return st;
	int on = 1, off = 0;
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_VAD, &on);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_DENOISE, &on);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC, &off);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_PROB_START, &start);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_PROB_CONTINUE, &cont);
	return st;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

const speexBuiltIn = true

type speexVAD struct {
	st  *C.SpeexPreprocessState
	buf []int16
}

func newSpeex(o Options) (Detector, error) {
	start := o.Mode
	if start == 0 {
		start = 80
	}
	n := 16 * o.FrameMS
	st := C.vad_speex_new(C.int(n), C.int(start), C.int(max(start-15, 1)))
	if st == nil {
		return nil, errors.New("vad: speex_preprocess_state_init failed")
	}
	return &speexVAD{st: st, buf: make([]int16, n)}, nil
}

func (s *speexVAD) Kind() string { return KindSpeex }

// Speech runs the preprocessor on a copy (it denoises in place).
func (s *speexVAD) Speech(frame []int16, _ bool) bool {
	if len(frame) != len(s.buf) {
		return false
	}
	copy(s.buf, frame)
	return C.speex_preprocess_run(s.st, (*C.spx_int16_t)(unsafe.Pointer(&s.buf[0]))) == 1
}

func (s *speexVAD) Close() error {
	if s.st != nil {
		C.speex_preprocess_state_destroy(s.st)
		s.st = nil
	}
	return nil
}
