//go:build webrtcapm && cgo

package main

// tagWebRTCAPM names the webrtcapm build tag in `version` when it is set.
const tagWebRTCAPM = "webrtcapm"
