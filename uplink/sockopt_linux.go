package uplink

import "syscall"

// tcpNotSentLowat is TCP_NOTSENT_LOWAT from linux/tcp.h.
const tcpNotSentLowat = 25

// limitUnsent bounds the bytes the kernel holds unsent for the uplink
// socket. Without it, on a link slower than the video, the socket buffer
// (autotuned up to 4 MiB) swallows video frames the lossy lane would
// otherwise drop, and mic audio queues behind them for seconds. Errors
// (old kernels) are ignored: the option only tightens latency.
func limitUnsent(network, address string, rc syscall.RawConn) error {
	rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotSentLowat, notSentLowat)
	})
	return nil
}
