//go:build !linux

package duplex

import "time"

var cpuEpoch = time.Now()

// threadCPU falls back to wall time where per-thread CPU is not available.
func threadCPU() time.Duration { return time.Since(cpuEpoch) }
