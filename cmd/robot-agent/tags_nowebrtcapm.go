//go:build !(webrtcapm && cgo)

package main

const tagWebRTCAPM = ""
