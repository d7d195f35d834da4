//go:build !linux

package uplink

import "syscall"

// limitUnsent is a no-op where TCP_NOTSENT_LOWAT is not available.
func limitUnsent(network, address string, rc syscall.RawConn) error { return nil }
