package hwtest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// RequireAudioEnv, when set (scripts/with-pulse.sh sets it), turns a missing
// real audio device from a skip into a test failure.
const RequireAudioEnv = "ROBOT_AGENT_REQUIRE_AUDIO"

// SkipOrFail skips a real-device test because why, or fails it when
// RequireAudioEnv is set.
func SkipOrFail(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(RequireAudioEnv) != "" {
		tb.Fatalf("%s is set but %s", RequireAudioEnv, why)
	}
	tb.Skipf("no audio device reachable (%s); run under scripts/with-pulse.sh", why)
}

// LockAudio serialises tests that use the shared audio devices across test
// processes (go test runs packages in parallel, and they all play into the
// same PulseAudio sink; one even unplugs it). It holds an exclusive flock
// on a file in $XDG_RUNTIME_DIR until the test ends.
func LockAudio(tb testing.TB) {
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
