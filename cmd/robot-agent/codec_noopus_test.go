//go:build !(opus && cgo)

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunOpusOnWithoutOpus: asking for Opus in a binary built without it
// fails at start-up with one line that says how to get it; auto falls
// back to PCM.
func TestRunOpusOnWithoutOpus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("audio_codec:\n  opus: on\n"), 0o644)
	code, _, errs := runCLI("run", "--sim", "--duration", "1s", "--config", path)
	if code != 1 || !strings.Contains(errs, "audio_codec.opus is on, but this binary has no Opus codec") ||
		!strings.Contains(errs, "-tags opus") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
