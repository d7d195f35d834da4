//go:build portaudio && cgo

package handoffbench

/*
#include "handoff.h"
*/
import "C"

import (
	"runtime"
	"syscall"
)

func lockThread() { runtime.LockOSThread() }

// threadRealtime moves the calling (locked) thread to SCHED_FIFO at prio.
func threadRealtime(prio int) error {
	if e := C.hb_thread_realtime(C.int(prio)); e != 0 {
		return syscall.Errno(e)
	}
	return nil
}
