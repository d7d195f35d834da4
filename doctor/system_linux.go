package doctor

import (
	"fmt"
	"io/fs"
	"syscall"
)

func owner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}

// Kernel NTP constants from <sys/timex.h>.
const (
	timeError = 5    // TIME_ERROR: clock not synchronised
	staUnsync = 0x40 // STA_UNSYNC
)

func kernelSynced() (bool, error) {
	var tx syscall.Timex // Modes 0: read only
	state, err := syscall.Adjtimex(&tx)
	if err != nil {
		return false, fmt.Errorf("doctor: adjtimex: %w", err)
	}
	return state != timeError && tx.Status&staUnsync == 0, nil
}
