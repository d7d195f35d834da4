//go:build race

package duplex

// raceEnabled: the race detector slows the simulated chain (Go code)
// about 15-fold; the longest scenes run in make test's pass without it.
const raceEnabled = true
