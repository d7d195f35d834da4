//go:build portaudio && cgo

package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw/hwtest"
)

// TestRealSay plays a file through PortAudio into the private PulseAudio's
// null sink (scripts/with-pulse.sh) and records the sink's monitor.
func TestRealSay(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time audio")
	}
	hwtest.LockAudio(t)
	rec := startParec(t, clock.NewReal(), 24000)
	in := filepath.Join(t.TempDir(), "tone.wav")
	writeTone(t, in, 44100, 1, 660, 1, 0.3)
	code, out, errs := runCLI("say", "--config", "", in)
	got := rec.stop()
	if code != 0 || !strings.Contains(out, "played ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	rms, freq := toneOf(got, 24000)
	// A wrong rate conversion (44.1 vs 48 kHz) would give 606 or 718 Hz.
	if math.Abs(freq-660) > 25 || rms < 0.3/math.Sqrt2*0.5 {
		t.Fatalf("recorded RMS %.3f, tone %.1f Hz; want about %.3f at 660 Hz", rms, freq, 0.3/math.Sqrt2)
	}
	t.Logf("recorded RMS %.3f, tone %.1f Hz", rms, freq)
}
