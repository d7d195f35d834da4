//go:build speexdsp && cgo

package main

// tagSpeexDSP names the speexdsp build tag in `version` when it is set.
const tagSpeexDSP = "speexdsp"
