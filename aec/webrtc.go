//go:build webrtcapm && cgo

package aec

/*
#cgo pkg-config: webrtc-audio-processing
#cgo CXXFLAGS: -std=c++11
#cgo LDFLAGS: -lstdc++
#include "webrtc_apm.h"
*/
import "C"

import (
	"errors"
	"sync/atomic"
	"unsafe"
)

const webrtcBuiltIn = true

type webrtcAEC struct {
	a     *C.aec_apm
	errs  atomic.Int64
	delay int
}

func newWebRTC(o Options) (Canceller, error) {
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	a := C.aec_apm_new(Rate, b(o.NoiseSuppression), b(o.AGC), C.int(suppressionLevel(o.Suppression)))
	if a == nil {
		return nil, errors.New("aec: webrtc AudioProcessing::Create failed")
	}
	return &webrtcAEC{a: a}, nil
}

func (w *webrtcAEC) Kind() string { return KindWebRTC }

func (w *webrtcAEC) Process(out, near, far []int16) {
	_, _, _ = out[FrameSamples-1], near[FrameSamples-1], far[FrameSamples-1]
	// The far end is already aligned by Source, so the remaining device
	// delay is ~0; delay-agnostic mode tracks what is left.
	if C.aec_apm_process(w.a, (*C.int16_t)(unsafe.Pointer(&out[0])), (*C.int16_t)(unsafe.Pointer(&near[0])), (*C.int16_t)(unsafe.Pointer(&far[0])), C.int(w.delay)) != 0 {
		w.errs.Add(1)
	}
}

// Voice reports the APM voice detector's verdict on the last frame.
func (w *webrtcAEC) Voice() bool { return C.aec_apm_voice(w.a) != 0 }

// Reset is a no-op: the delay-agnostic APM follows a shifted far end itself.
func (w *webrtcAEC) Reset() {}

func (w *webrtcAEC) Close() error {
	if w.a != nil {
		C.aec_apm_free(w.a)
		w.a = nil
	}
	return nil
}
