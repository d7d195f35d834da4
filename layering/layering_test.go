package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/robot-agent/robot-agent"

// rank is each package's layer (its path inside the module). A package may
// import only packages of a strictly lower rank. A new package must be
// given one here.
var rank = map[string]int{
	// Leaves: no package of this module below them.
	"clock": 0, "metrics": 0, "protocol": 0, "config/field": 0,
	"codec/pcm": 0, "codec/resample": 0, "codec/jpeg": 0,
	"doctor": 0, "build": 0, "layering": 0,
	"jitter":              0, // playout delay estimator (issue 11)
	"internal/faultproxy": 0,
	"fft":                 0, // offline measurements (speech quality, echo path)
	"quantile":            0, // running quantile trackers (the AEC's thresholds, the reverberation model)
	"gainramp":            0, // a gain ramped frame by frame (the speaker's level stages)
	// Shared types and the device seams.
	"reverb":   1, // late reverberation model (the AEC's reverberation guard)
	"roomfile": 2, // the reverberation model kept across restarts (a file)
	"device":   1, "codec/wav": 1, "sdnotify": 1, "state/statetest": 1, "vad": 1,
	// The configuration file's schema: no pipeline stage or driver (see
	// confined).
	"config":      1,
	"timestretch": 1, // WSOLA time-stretch over codec/pcm (issue 11)
	// Signal processing on the seams.
	"room": 2,
	"aec":  3,
	// The control-event spool and the log rate limiter (issue 13).
	"spool": 1, "logthrottle": 1,
	"hw": 2, "codec/h264": 2, "codec/opus": 2, "codec/quality": 2,
	// The flight recorder: rings and bundle writing over codec/wav.
	"flightrec": 2,
	// Drivers (implementations of the seams) and pipeline stages. They do
	// not import one another: hw/sim does not import hw/portaudio,
	// capture does not import playback, skills does not import state.
	"hw/sim": 3, "hw/portaudio": 3, "hw/camera": 3, "hw/host": 3, "hw/hwtest": 3,
	"capture": 3, "playback": 3, "state": 3, "identity": 3, "skills": 3,
	"duck":      3, // local ducking: a speaker decorator over hw
	"volume":    3, // the robot's own volume: a speaker decorator over hw
	"clipguard": 3, // lowers the voice when its echo clips the mic: a speaker decorator over hw
	"warmup":    3, // a start-up sound the canceller learns the room from: a speaker decorator over hw
	// Stages built on those.
	"uplink": 4, "video": 4, "video/videotest": 4,
	"state/gpio": 4, "state/imu": 4, "state/sysfs": 4, "duplex": 4,
	"jittertrace": 4, // replays traces through playback (robot-agent jitter-replay)
	// Benchmark-only code beside its driver.
	"hw/portaudio/handoffbench": 4,
	// Wiring and development tools.
	"state/modules": 5, "gateway": 5, "conformance": 5,
	// Fault-injection scenarios (tests only; they drive everything).
	"internal/chaos": 6,
	// The command: the one place that wires everything.
	"cmd/robot-agent": 9,
}

// forbidden lists dependencies (module path prefixes, transitive) that a
// package must not pull in.
var forbidden = []struct {
	pkgs []string // packages of this module ("x/..." matches x and below)
	deps []string // import path prefixes
	why  string
}{
	{[]string{"hw"}, []string{"periph.io/x/host/"}, "hw is a pure seam package; periph's host drivers belong in hw/host"},
	{[]string{"protocol", "codec/...", "capture", "playback", "jitter", "timestretch", "uplink", "config/...", "device", "clock", "metrics", "flightrec"},
		[]string{"periph.io/x/host/", "github.com/pion/", "github.com/gordonklaus/portaudio", "github.com/blackjack/webcam"},
		"the protocol, codecs and the audio fast lane must not depend on device drivers"},
	{[]string{"identity", "skills"}, []string{module + "/state"}, "identity and skills share types through package device, not state"},
	{[]string{"codec/..."}, []string{module + "/hw"}, "codecs do not depend on the device seams (hw/camera depends on codec/h264)"},
	{[]string{"cmd/robot-agent"}, []string{module + "/hw/portaudio/handoffbench"}, "benchmark-only code stays out of the binary"},
}

// confined lists packages that may depend (transitively) on no package
// of this module but the ones allowed.
var confined = []struct {
	pkgs    []string // packages of this module ("x/..." matches x and below)
	allowed []string // the only packages of this module they may depend on
	why     string
}{
	{[]string{"config/..."}, []string{"config/field"},
		"config holds the YAML schema only: pipeline stages and drivers own their options and validation, and cmd/robot-agent maps one onto the other"},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
	Module     *struct{ Path string }
}

// list runs go list -deps -json with the given tags and cgo setting and
// returns this module's packages.
func list(t *testing.T, tags string, cgo bool) []listedPackage {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-json", "-tags", tags, "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if cgo {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v\n%s", tags, err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module != nil && p.Module.Path == module {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchesAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// check returns every violation in pkgs.
func check(pkgs []listedPackage) []string {
	var bad []string
	for _, p := range pkgs {
		name := rel(p.ImportPath)
		r, ok := rank[name]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no layer assigned; add it to rank in layering/layering_test.go", name))
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			in := rel(imp)
			ri, ok := rank[in]
			if ok && ri >= r {
				bad = append(bad, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package may import only lower layers", name, r, in, ri))
			}
		}
		for _, f := range forbidden {
			if !matchesAny(f.pkgs, name) {
				continue
			}
			for _, d := range p.Deps {
				for _, prefix := range f.deps {
					if d == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(d, prefix) {
						bad = append(bad, fmt.Sprintf("%s depends on %s: %s", name, d, f.why))
					}
				}
			}
		}
		for _, c := range confined {
			if !matchesAny(c.pkgs, name) {
				continue
			}
			for _, d := range p.Deps {
				if d != module && !strings.HasPrefix(d, module+"/") {
					continue
				}
				if dep := rel(d); !slices.Contains(c.allowed, dep) {
					bad = append(bad, fmt.Sprintf("%s depends on %s: %s", name, dep, c.why))
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// TestLayering checks the packages as built without cgo and with every
// optional tag.
func TestLayering(t *testing.T) {
	for _, b := range []struct {
		tags string
		cgo  bool
	}{{"", false}, {"portaudio x264 webrtcapm speexdsp opus", true}} {
		pkgs := list(t, b.tags, b.cgo)
		if len(pkgs) < len(rank)/2 {
			t.Fatalf("go list -tags %q found only %d packages of %s", b.tags, len(pkgs), module)
		}
		for _, v := range check(pkgs) {
			t.Errorf("tags %q: %s", b.tags, v)
		}
	}
}

// TestCheckCatchesViolations: the checker itself reports an upward import,
// an unranked package and a forbidden dependency.
func TestCheckCatchesViolations(t *testing.T) {
	got := check([]listedPackage{
		{ImportPath: module + "/protocol", Imports: []string{module + "/uplink"}},
		{ImportPath: module + "/newthing"},
		{ImportPath: module + "/hw", Deps: []string{"periph.io/x/host/v3"}},
		{ImportPath: module + "/skills", Deps: []string{module + "/state"}},
		{ImportPath: module + "/capture", Imports: []string{module + "/playback"}},
		{ImportPath: module + "/config", Imports: []string{module + "/config/field", module + "/capture"},
			Deps: []string{module + "/config/field", module + "/capture", module + "/vad", "gopkg.in/yaml.v3"}},
	})
	why := "config holds the YAML schema only: pipeline stages and drivers own their options and validation, and cmd/robot-agent maps one onto the other"
	want := []string{
		"capture (layer 3) imports playback (layer 3): a package may import only lower layers",
		"config (layer 1) imports capture (layer 3): a package may import only lower layers",
		"config depends on capture: " + why,
		"config depends on vad: " + why,
		"hw depends on periph.io/x/host/v3: hw is a pure seam package; periph's host drivers belong in hw/host",
		"newthing: no layer assigned; add it to rank in layering/layering_test.go",
		"protocol (layer 0) imports uplink (layer 4): a package may import only lower layers",
		"skills depends on " + module + "/state: identity and skills share types through package device, not state",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("check found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
