//go:build webrtcapm && cgo

package vad

/*
#cgo pkg-config: webrtc-audio-processing
#include <stddef.h>
#include <stdint.h>
// The library exports WebRTC's C VAD but Debian's -dev package does not
// ship its header; these are its prototypes (webrtc/common_audio/vad/
// include/webrtc_vad.h of the 0.3 sources).
typedef struct WebRtcVadInst VadInst;
VadInst* WebRtcVad_Create(void);
void WebRtcVad_Free(VadInst* handle);
int WebRtcVad_Init(VadInst* handle);
int WebRtcVad_set_mode(VadInst* handle, int mode);
int WebRtcVad_Process(VadInst* handle, int fs, const int16_t* audio_frame, size_t frame_length);
*/
import "C"

import (
	"errors"
	"unsafe"
)

const webrtcBuiltIn = true

type webrtcVAD struct{ h *C.VadInst }

func newWebRTC(o Options) (Detector, error) {
	h := C.WebRtcVad_Create()
	if h == nil || C.WebRtcVad_Init(h) != 0 {
		return nil, errors.New("vad: WebRtcVad_Create/Init failed")
	}
	if C.WebRtcVad_set_mode(h, C.int(o.Mode)) != 0 {
		C.WebRtcVad_Free(h)
		return nil, errors.New("vad: WebRtcVad_set_mode failed")
	}
	return &webrtcVAD{h: h}, nil
}

func (w *webrtcVAD) Kind() string { return KindWebRTC }

func (w *webrtcVAD) Speech(frame []int16, _ bool) bool {
	if len(frame) == 0 {
		return false
	}
	return C.WebRtcVad_Process(w.h, 16000, (*C.int16_t)(unsafe.Pointer(&frame[0])), C.size_t(len(frame))) == 1
}

func (w *webrtcVAD) Close() error {
	if w.h != nil {
		C.WebRtcVad_Free(w.h)
		w.h = nil
	}
	return nil
}
