//go:build portaudio

package main

// tagPortAudio names the portaudio build tag in `version` when it is set.
const tagPortAudio = "portaudio"
