package build_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestChangelogLongHistory: a history whose commit subjects fill more than a
// pipe buffer after the MAX_LINES listed (the project's own did at 80 KB)
// still gives a changelog: changelog.sh once stopped reading there, git log
// died of SIGPIPE and, under pipefail, the .deb build failed with exit 141.
func TestChangelogLongHistory(t *testing.T) {
	need(t, "git", "gzip")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"changelog.sh", "lib.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "build", f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &gitRepo{t: t, dir: dir}
	r.git("init", "-q")
	// 200 empty commits with 1 KB subjects: 200 KB of subjects.
	subject := strings.Repeat("a long commit subject ", 46)
	for i := range 200 {
		r.git("commit", "-q", "--allow-empty", "-m", fmt.Sprint(i, " ", subject))
	}
	out := filepath.Join(dir, "changelog.gz")
	run := exec.Command("bash", filepath.Join(dir, "build", "changelog.sh"), out)
	run.Env = append(os.Environ(), "VERSION=0.0.1~dev.200.gabc", "MAX_LINES=5")
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("changelog.sh: %v\n%s", err, b)
	}
	gz, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(text), "\n  * "); got != 6 {
		t.Errorf("%d entries, want 5 subjects and the '... and more' line:\n%s", got, text)
	}
	if !strings.Contains(string(text), "... and more") {
		t.Errorf("no '... and more' line:\n%s", text)
	}
}
