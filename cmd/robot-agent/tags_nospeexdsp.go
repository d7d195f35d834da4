//go:build !(speexdsp && cgo)

package main

const tagSpeexDSP = ""
