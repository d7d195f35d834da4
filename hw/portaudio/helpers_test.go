//go:build portaudio && cgo

package portaudio

import (
	"io"
	"log/slog"
	"testing"

	"github.com/robot-agent/robot-agent/hw/hwtest"
)

// openTestHost opens a Host on the real PortAudio and checks that a default
// input and output device exist (the private PulseAudio's null sink and
// its monitor under scripts/with-pulse.sh).
func openTestHost(tb testing.TB, cfg HostConfig) (*Host, Device, Device) {
	tb.Helper()
	if cfg.Log == nil {
		cfg.Log = testLogger(tb)
	}
	hwtest.LockAudio(tb)
	h, err := NewHost(cfg)
	if err != nil {
		hwtest.SkipOrFail(tb, "PortAudio: "+err.Error())
	}
	tb.Cleanup(func() { h.Close() })
	devs := h.Devices()
	out, err := Match(devs, "", true)
	if err != nil {
		hwtest.SkipOrFail(tb, err.Error())
	}
	in, err := Match(devs, "", false)
	if err != nil {
		hwtest.SkipOrFail(tb, err.Error())
	}
	return h, in, out
}

// testLogger logs to the test output with -v, else discards.
func testLogger(tb testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p[:len(p)-1]))
	return len(p), nil
}
