package spool

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and the size, when it grew) to the device.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
