package portaudio

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// soundServerThreads are the names of threads a sound-server client
// library starts inside this process and that the device callback waits
// for: libpulse's threaded mainloop, which ALSA's pulse plugin (the
// "default" device on a desktop or a PulseAudio/PipeWire board) uses to
// talk to the server. With an ALSA hw: device there are none.
var soundServerThreads = []string{"threaded-ml"}

// raiseSoundServerThreads moves this process's sound-server client threads
// that are not real-time yet to SCHED_FIFO at prio, and returns how many
// it moved and the first error. A real-time callback thread that waits
// on a normal-priority client thread is only as punctual as that thread.
func raiseSoundServerThreads(prio int) (int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, err
	}
	n := 0
	var first error
	for _, e := range ents {
		comm, err := os.ReadFile("/proc/self/task/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		match := false
		for _, s := range soundServerThreads {
			match = match || name == s
		}
		if !match {
			continue
		}
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pol, _, _ := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0); pol == schedFIFO {
			continue
		}
		param := struct{ prio int32 }{int32(prio)}
		if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), schedFIFO, uintptr(unsafe.Pointer(&param))); errno != 0 {
			if first == nil {
				first = errno
			}
			continue
		}
		n++
	}
	return n, first
}

const schedFIFO = 1
