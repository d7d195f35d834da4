//go:build !(speexdsp && cgo)

package vad

import "fmt"

const speexBuiltIn = false

func newSpeex(Options) (Detector, error) {
	return nil, fmt.Errorf("%w: speex needs cgo and the speexdsp build tag (libspeexdsp-dev)", ErrNotBuiltIn)
}
