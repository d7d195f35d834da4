package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/sim"
)

// metricsTable reads the metric names documented in docs/metrics.md (the
// first column of its tables); <word> stands for a variable part.
func metricsTable(t *testing.T) (names []string, match func(string) bool) {
	t.Helper()
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9_:<>]+)` \\|")
	var res []*regexp.Regexp
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		names = append(names, m[1])
		pat := regexp.QuoteMeta(m[1])
		pat = regexp.MustCompile(`<[a-z_]+>`).ReplaceAllString(pat, `[a-z0-9_]+`)
		res = append(res, regexp.MustCompile("^"+pat+"$"))
	}
	return names, func(name string) bool {
		for _, re := range res {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}
}

// registeredInSource finds every metric the code registers: calls of
// .Counter/.Gauge/.Histogram whose first argument is a string literal, a
// string constant, or a concatenation (variable parts become <x>).
func registeredInSource(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if bl, ok := vs.Values[i].(*ast.BasicLit); ok && bl.Kind == token.STRING {
							consts[id.Name], _ = strconv.Unquote(bl.Value)
						}
					}
				}
			}
			return true
		})
	}
	var locals map[string]string // string variables of the function being scanned
	var str func(e ast.Expr) string
	str = func(e ast.Expr) string {
		switch v := e.(type) {
		case *ast.BasicLit:
			if v.Kind == token.STRING {
				s, _ := strconv.Unquote(v.Value)
				return s
			}
		case *ast.Ident:
			if s, ok := locals[v.Name]; ok {
				return s
			}
			if s, ok := consts[v.Name]; ok {
				return s
			}
		case *ast.SelectorExpr:
			if s, ok := consts[v.Sel.Name]; ok {
				return s
			}
		case *ast.BinaryExpr:
			if v.Op == token.ADD {
				return str(v.X) + str(v.Y)
			}
		case *ast.ParenExpr:
			return str(v.X)
		}
		return "<x>"
	}
	found := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			// Metric name prefixes kept in local variables (p := "robot_agent_audio_" + dir + "_").
			locals = map[string]string{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
					for i, l := range as.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							if v := str(as.Rhs[i]); strings.HasPrefix(v, "robot_agent_") {
								locals[id.Name] = v
							}
						}
					}
				}
				return true
			})
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Counter" && sel.Sel.Name != "Gauge" && sel.Sel.Name != "Histogram") {
					return true
				}
				if name := str(call.Args[0]); strings.HasPrefix(name, "robot_agent_") {
					found[name] = fset.Position(call.Pos()).String()
				}
				return true
			})
		}
	}
	return found
}

// TestEveryMetricIsDocumented fails when the code registers a metric that
// docs/metrics.md does not list: statically (every registration in the
// source, including those only real devices or optional parts make) and at
// run time (a simulated robot with its body and the embedded gateway).
func TestEveryMetricIsDocumented(t *testing.T) {
	documented, isDocumented := metricsTable(t)
	if len(documented) < 20 {
		t.Fatalf("docs/metrics.md lists %d metrics; the table did not parse", len(documented))
	}
	src := registeredInSource(t)
	if len(src) < 50 {
		t.Fatalf("found only %d registrations in the source; the scan is broken", len(src))
	}
	var missing []string
	for name, at := range src {
		probe := strings.ReplaceAll(name, "<x>", "code")
		if !isDocumented(probe) {
			missing = append(missing, name+" (registered at "+at+")")
		}
	}

	// At run time, with the simulated robot body and video configured.
	e := startE2E(t, &sim.SpeechScript{Utterances: []sim.Utterance{{Speech: 0, Silence: 300 * time.Millisecond}, {Speech: 500 * time.Millisecond, Silence: time.Second}}},
		gateway.Config{Token: "sim-token", Speed: 8}, func(c *config.Config) { c.Metrics.Listen = config.MetricsOff })
	waitUntil(t, 10*time.Second, "a session", func() bool { return e.reg.Value("robot_agent_uplink_connects_total") > 0 })
	for _, name := range e.reg.Names() {
		if !isDocumented(name) {
			missing = append(missing, name+" (registered at run time)")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("metric not in docs/metrics.md: %s", m)
	}
	t.Logf("%d metrics documented, %d registrations in the source, %d registered by a simulated run", len(documented), len(src), len(e.reg.Names()))
}
