//go:build !(webrtcapm && cgo)

package vad

import "fmt"

const webrtcBuiltIn = false

func newWebRTC(Options) (Detector, error) {
	return nil, fmt.Errorf("%w: webrtc needs cgo and the webrtcapm build tag (libwebrtc-audio-processing-dev)", ErrNotBuiltIn)
}
