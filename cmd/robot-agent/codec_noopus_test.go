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
	if code != 2 || !strings.Contains(errs, `audio_codec.opus: "on": this binary has no Opus codec`) ||
		!strings.Contains(errs, "-tags opus") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line", code, errs)
	}
	os.WriteFile(path, []byte("audio_codec:\n  gateway: opus\n"), 0o644)
	code, _, errs = runCLI("run", "--sim", "--duration", "1s", "--config", path)
	if code != 2 || !strings.Contains(errs, `audio_codec.gateway: "opus": this binary has no Opus codec (build with cgo and -tags opus`) {
		t.Fatalf("embedded gateway opus: exit %d, stderr %q", code, errs)
	}
}
