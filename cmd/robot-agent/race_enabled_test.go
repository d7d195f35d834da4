//go:build race

package main

// raceEnabled: the race detector slows Go code several-fold, so real-time
// tests give the Go side more slack.
const raceEnabled = true
