//go:build !(speexdsp && cgo)

package aec

import "fmt"

const speexBuiltIn = false

func newSpeex(Options) (Canceller, error) {
	return nil, fmt.Errorf("%w: speex needs cgo and the speexdsp build tag (libspeexdsp-dev); rebuild with -tags speexdsp", ErrNotBuiltIn)
}

func newSpeexLinear(int) (linearFilter, error) {
	return nil, fmt.Errorf("%w: the linear uplink filter is speex MDF: it needs cgo and the speexdsp build tag (libspeexdsp-dev)", ErrNotBuiltIn)
}
