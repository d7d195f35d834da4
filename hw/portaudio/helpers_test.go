//go:build portaudio && cgo

package portaudio

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// requireAudio reports why real-device tests cannot run here, or "" if they
// can. Under scripts/with-pulse.sh (ROBOT_AGENT_REQUIRE_AUDIO=1) a missing
// device is a test failure instead of a skip.
func skipOrFail(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("ROBOT_AGENT_REQUIRE_AUDIO") != "" {
		tb.Fatalf("ROBOT_AGENT_REQUIRE_AUDIO is set but %s", why)
	}
	tb.Skipf("no audio device reachable (%s); run under scripts/with-pulse.sh", why)
}

// openTestHost opens a Host on the real PortAudio and checks that a default
// input and output device exist (the private PulseAudio's null sink and
// its monitor under scripts/with-pulse.sh).
func openTestHost(tb testing.TB, cfg HostConfig) (*Host, Device, Device) {
	tb.Helper()
	if cfg.Log == nil {
		cfg.Log = testLogger(tb)
	}
	lockAudio(tb)
	h, err := NewHost(cfg)
	if err != nil {
		skipOrFail(tb, "PortAudio: "+err.Error())
	}
	tb.Cleanup(func() { h.Close() })
	devs := h.Devices()
	out, err := Match(devs, "", true)
	if err != nil {
		skipOrFail(tb, err.Error())
	}
	in, err := Match(devs, "", false)
	if err != nil {
		skipOrFail(tb, err.Error())
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

// lockAudio serialises tests that use the shared audio devices across test
// processes (go test runs packages in parallel, and they all play into the
// same PulseAudio sink; one even unplugs it). It holds an exclusive flock
// on a file in $XDG_RUNTIME_DIR until the test ends.
func lockAudio(tb testing.TB) {
	tb.Helper()
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.OpenFile(filepath.Join(dir, "robot-agent-audio-tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatalf("audio test lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatalf("audio test lock: %v", err)
	}
	tb.Cleanup(func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
}
