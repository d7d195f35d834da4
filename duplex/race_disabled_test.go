//go:build !race

package duplex

const raceEnabled = false
