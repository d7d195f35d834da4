//go:build portaudio && cgo && race

package portaudio

// raceEnabled: the race detector slows the Go side several-fold, so the
// real-time quality tests (levels, timing, flush to silence) skip under it;
// scripts/test.sh runs them once more without -race.
const raceEnabled = true
