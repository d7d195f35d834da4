package build_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitRepo is a scratch repository for version tests.
type gitRepo struct {
	t   *testing.T
	dir string
	n   int
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) commit() {
	r.t.Helper()
	r.n++
	if err := os.WriteFile(filepath.Join(r.dir, "f"), []byte(fmt.Sprint(r.n)), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.git("add", "f")
	r.git("commit", "-q", "-m", fmt.Sprint("commit ", r.n))
}

func (r *gitRepo) version() string {
	r.t.Helper()
	out, err := exec.Command("./version.sh", r.dir).CombinedOutput()
	if err != nil {
		r.t.Fatalf("version.sh: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// TestVersionOrdersAsHistory builds a history with tags, pre-releases,
// dev builds and a dirty tree, takes build/version.sh at each point and
// checks that dpkg orders every version after the one before (the old
// scheme, 0.0.0+git<hash>, made a newer build a downgrade in about half
// of all commit pairs), and the exact strings at the landmarks.
func TestVersionOrdersAsHistory(t *testing.T) {
	need(t, "git", "dpkg", "bash")
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	type build struct{ v, want string } // want: regexp, anchored
	var seq []build
	step := func(want string) { seq = append(seq, build{r.version(), want}) }
	hash := `g[0-9a-f]{7}`

	for i := 1; i <= 11; i++ { // crosses 9 -> 10: numeric, not string, order
		r.commit()
		step(fmt.Sprintf(`0\.0\.0~dev\.%d\.%s`, i, hash))
	}
	if err := os.WriteFile(filepath.Join(r.dir, "f"), []byte("edit"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(`0\.0\.0~dev\.11\.` + hash + `\.dirty`)
	r.git("checkout", "-q", "f")
	r.commit()
	r.git("tag", "v0.1.0")
	step(`0\.1\.0`)
	for i := 1; i <= 3; i++ {
		r.commit()
		step(fmt.Sprintf(`0\.1\.1~dev\.%d\.%s`, i, hash))
	}
	r.commit()
	r.git("tag", "v0.2.0-rc.1")
	step(`0\.2\.0~rc\.1`)
	r.commit()
	step(`0\.2\.0~rc\.1\.dev\.1\.` + hash)
	r.commit()
	r.git("tag", "v0.2.0-rc.2")
	step(`0\.2\.0~rc\.2`)
	r.git("tag", "v0.2.0") // the release candidate becomes the release
	step(`0\.2\.0`)
	r.commit()
	step(`0\.2\.1~dev\.1\.` + hash)
	r.commit()
	r.git("tag", "v0.2.1")
	step(`0\.2\.1`)
	r.commit()
	r.git("tag", "v0.10.0")
	step(`0\.10\.0`)
	r.commit()
	step(`0\.10\.1~dev\.1\.` + hash)

	for i, b := range seq {
		if !regexp.MustCompile(`^` + b.want + `$`).MatchString(b.v) {
			t.Errorf("build %d: version %q, want /%s/", i, b.v, b.want)
		}
		if i == 0 {
			continue
		}
		prev := seq[i-1].v
		if err := exec.Command("dpkg", "--compare-versions", prev, "lt", b.v).Run(); err != nil {
			t.Errorf("dpkg --compare-versions %s lt %s: false (build %d would be a downgrade)", prev, b.v, i)
		}
	}
	t.Logf("%d builds in order: %s ... %s", len(seq), seq[0].v, seq[len(seq)-1].v)
}

// TestVersionRefusesShallowClone: a shallow clone cannot count commits.
func TestVersionRefusesShallowClone(t *testing.T) {
	need(t, "git", "bash")
	src := &gitRepo{t: t, dir: t.TempDir()}
	src.git("init", "-q")
	src.commit()
	src.commit()
	dst := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "file://"+src.dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	out, err := exec.Command("./version.sh", dst).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "shallow clone") {
		t.Fatalf("version.sh on a shallow clone: err %v, output %q; want a failure naming the shallow clone", err, out)
	}
}
