//go:build linux

package duplex

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling OS thread (the caller has
// locked its goroutine to it).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
