//go:build portaudio && cgo && !race

package portaudio

const raceEnabled = false
