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
	a        *C.aec_apm
	errs     atomic.Int64
	level    C.int // configured suppression
	dtLevel  C.int // in double talk (-1: unchanged)
	inDouble bool
	ns       bool
	filterMS int // the AEC's adaptive filter (FilterMS)
}

// OutputDelay implements outputDelayer: the APM's output lags its input by
// 112 samples (7 ms: the AEC's suppressor works on overlapping blocks),
// 208 with its noise suppressor (TestOutputDelayIsWhatTheCancellerDoes
// measures both).
func (w *webrtcAEC) OutputDelay() int {
	if w.ns {
		return 208
	}
	return 112
}

// webrtcLeadMS: how much earlier than its echo Source hands the far end to
// the APM. The legacy AEC's extended filter covers 128 ms, with its far-end
// read pointer starting some 25 ms behind the newest far-end sample
// (echo_cancellation.c, ProcessExtended); an echo that arrives earlier than
// that lies before the first tap. Measured (docs/benchmarks.md): 48 ms
// converges in the first 2 s (27 dB) on rooms of 20-250 ms delay; the
// previous 8 ms moved the far end right after the first delay estimate
// and lost about 2 s re-adapting (9 dB in the first 2 s).
const webrtcLeadMS = 48

func newWebRTC(o Options) (Canceller, error) {
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	a := C.aec_apm_new(Rate, b(o.NoiseSuppression), b(o.AGC), C.int(suppressionLevel(o.Suppression)), b(o.Delay == DelayModeAgnostic), b(!o.ShortFilter))
	if a == nil {
		return nil, errors.New("aec: webrtc AudioProcessing::Create failed")
	}
	w := &webrtcAEC{a: a, level: C.int(suppressionLevel(o.Suppression)), dtLevel: -1, ns: o.NoiseSuppression, filterMS: webrtcExtendedMS}
	if o.ShortFilter {
		w.filterMS = webrtcShortMS
	}
	if o.DoubleTalkSuppression != "" {
		w.dtLevel = C.int(suppressionLevel(o.DoubleTalkSuppression))
	}
	return w, nil
}

func (w *webrtcAEC) Kind() string { return KindWebRTC }

func (w *webrtcAEC) Process(out, near, far []int16) {
	_, _, _ = out[FrameSamples-1], near[FrameSamples-1], far[FrameSamples-1]
	// The far end is already aligned by Source (LeadMS before its echo);
	// the reported delay is 0 (the APM raises it to its 20 ms minimum).
	if C.aec_apm_process(w.a, (*C.int16_t)(unsafe.Pointer(&out[0])), (*C.int16_t)(unsafe.Pointer(&near[0])), (*C.int16_t)(unsafe.Pointer(&far[0])), 0) != 0 {
		w.errs.Add(1)
	}
}

// DoubleTalk implements doubleTalker: the suppression level follows
// Options.DoubleTalkSuppression while on.
func (w *webrtcAEC) DoubleTalk(on bool) {
	if w.dtLevel < 0 || on == w.inDouble {
		return
	}
	w.inDouble = on
	if on {
		C.aec_apm_set_suppression(w.a, w.dtLevel)
	} else {
		C.aec_apm_set_suppression(w.a, w.level)
	}
}

// The legacy AEC's adaptive filter along the far end it is handed: 32
// partitions of 64 samples with the extended filter (the default), 12
// without (ShortFilter).
const webrtcExtendedMS, webrtcShortMS = 128, 48

// FilterMS implements filterSpanner.
func (w *webrtcAEC) FilterMS() int { return w.filterMS }

// LeadMS implements leader.
func (w *webrtcAEC) LeadMS() int { return webrtcLeadMS }

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
