//go:build !(portaudio && webrtcapm && cgo)

package main

import "testing"

// TestRealFullDuplexEchoPath runs in builds with the portaudio and
// webrtcapm tags (fullduplex_test.go; make test passes them where the
// libraries are installed: scripts/detect-tags.sh).
func TestRealFullDuplexEchoPath(t *testing.T) {
	t.Skip("full-duplex PulseAudio echo-path test: needs cgo and the build tags portaudio and webrtcapm (libportaudio, libwebrtc-audio-processing; scripts/detect-tags.sh)")
}
