//go:build !portaudio

package main

const tagPortAudio = ""
