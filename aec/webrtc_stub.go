//go:build !(webrtcapm && cgo)

package aec

import "fmt"

const webrtcBuiltIn = false

func newWebRTC(Options) (Canceller, error) {
	return nil, fmt.Errorf("%w: webrtc needs cgo and the webrtcapm build tag (libwebrtc-audio-processing-dev); rebuild with -tags webrtcapm", ErrNotBuiltIn)
}
