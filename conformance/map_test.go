package conformance

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mustSentence is one normative sentence of docs/protocol.md.
type mustSentence struct {
	section string
	text    string // whitespace collapsed
	line    int
}

// mapRow is one row of the conformance map (§16).
type mapRow struct {
	section, quote, party string
	tests                 []string
	line                  int
}

var (
	headingRE = regexp.MustCompile(`^(?:## (\d+)\. |### (\d+\.\d+) )`)
	mustRE    = regexp.MustCompile(`\bMUST\b`)
)

// parseSpec returns the MUST sentences outside code blocks and outside the
// conformance map, and the rows of the map.
func parseSpec(t *testing.T, path string) ([]mustSentence, []mapRow) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		musts   []mustSentence
		rows    []mapRow
		section string
		inCode  bool
		inMap   bool
		para    strings.Builder
		paraAt  int
		lineNo  int
	)
	flush := func() {
		text := strings.Join(strings.Fields(para.String()), " ")
		para.Reset()
		if section == "" || !mustRE.MatchString(text) {
			return
		}
		for _, sent := range splitSentences(text) {
			if mustRE.MatchString(sent) {
				musts = append(musts, mustSentence{section: section, text: sent, line: paraAt})
			}
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lineNo++
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			flush()
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil && (m[1] != "" || section != "") {
			flush()
			section = m[1] + m[2]
			inMap = strings.HasPrefix(l, "## 16.") || (inMap && m[2] != "")
			continue
		}
		if strings.HasPrefix(l, "## ") { // change log and other unnumbered sections
			flush()
			section, inMap = "", false
			continue
		}
		if inMap {
			if r, ok := parseRow(l); ok {
				r.line = lineNo
				rows = append(rows, r)
			}
			continue
		}
		trimmed := strings.TrimSpace(l)
		// Table rows, list items and blank lines end a paragraph; a table
		// row is a unit of its own.
		switch {
		case trimmed == "":
			flush()
			continue
		case strings.HasPrefix(trimmed, "|"):
			flush()
			para.WriteString(trimmed)
			paraAt = lineNo
			flush()
			continue
		case strings.HasPrefix(trimmed, "* ") || regexp.MustCompile(`^\d+\. `).MatchString(trimmed):
			flush()
		}
		if para.Len() == 0 {
			paraAt = lineNo
		}
		para.WriteString(l)
		para.WriteByte(' ')
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return musts, rows
}

// splitSentences splits at ". " / ": " followed by an upper-case letter or
// a backquote, which is how this document ends its sentences.
func splitSentences(p string) []string {
	var out []string
	start := 0
	for i := 0; i+2 < len(p); i++ {
		if (p[i] == '.' || p[i] == ';') && p[i+1] == ' ' && (p[i+2] >= 'A' && p[i+2] <= 'Z' || p[i+2] == '`' || p[i+2] == '(') {
			out = append(out, strings.TrimSpace(p[start:i+1]))
			start = i + 2
		}
	}
	return append(out, strings.TrimSpace(p[start:]))
}

var rowRE = regexp.MustCompile("^\\|\\s*([0-9.]+)\\s*\\|\\s*(.+?)\\s*\\|\\s*(robot|gateway|both)\\s*\\|\\s*(.+?)\\s*\\|$")

// testRefRE finds the test references of a row: `TestName` or
// `conformance <check id>`; text around them is commentary.
var testRefRE = regexp.MustCompile("`(Test\\w+|conformance [0-9.]+/[\\w-]+)`")

func parseRow(l string) (mapRow, bool) {
	m := rowRE.FindStringSubmatch(strings.TrimSpace(l))
	if m == nil {
		return mapRow{}, false
	}
	q := strings.Trim(m[2], `"“”`)
	q = strings.ReplaceAll(q, `\|`, "|")
	var tests []string
	for _, x := range testRefRE.FindAllStringSubmatch(m[4], -1) {
		tests = append(tests, x[1])
	}
	return mapRow{section: m[1], quote: strings.Join(strings.Fields(q), " "), party: m[3], tests: tests}, true
}

// repoTests returns the names of every Test function in the repository.
func repoTests(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestSpec_16_EveryMustIsMapped: every MUST of docs/protocol.md has a row
// in the conformance map (§16) whose quote is part of it, every row names
// at least one test, and every named test exists: a Go test function of the
// repository or a conformance check id ("conformance 5.3/ack-state").
// Robot-side rows need a robot-side Go test named TestSpec_<section>_….
func TestSpec_16_EveryMustIsMapped(t *testing.T) {
	doc := filepath.Join("..", "docs", "protocol.md")
	if _, err := os.Stat(doc); errors.Is(err, os.ErrNotExist) {
		t.Skip("docs/protocol.md not present")
	}
	musts, rows := parseSpec(t, doc)
	if len(musts) < 40 || len(rows) < 40 {
		t.Fatalf("found %d MUST sentences and %d map rows; the document was not parsed", len(musts), len(rows))
	}
	tests := repoTests(t, "..")
	checks := map[string]bool{}
	for _, c := range Checks() {
		checks[c.ID] = true
	}
	used := make([]bool, len(rows))
	for _, m := range musts {
		found := false
		for i, r := range rows {
			if r.section == m.section && strings.Contains(m.text, r.quote) {
				found, used[i] = true, true
			}
		}
		if !found {
			t.Errorf("protocol.md:%d: §%s MUST has no row in the conformance map (§16):\n    %s", m.line, m.section, m.text)
		}
	}
	for i, r := range rows {
		if !used[i] {
			t.Errorf("protocol.md:%d: map row §%s %q matches no MUST sentence of §%s", r.line, r.section, r.quote, r.section)
		}
		if !strings.Contains(r.quote, "MUST") {
			t.Errorf("protocol.md:%d: map row quote %q does not contain MUST", r.line, r.quote)
		}
		if len(r.tests) == 0 {
			t.Errorf("protocol.md:%d: map row §%s names no test", r.line, r.section)
		}
		robotSpecTest := false
		for _, name := range r.tests {
			if id, ok := strings.CutPrefix(name, "conformance "); ok {
				if !checks[id] {
					t.Errorf("protocol.md:%d: conformance check %q does not exist", r.line, id)
				}
				continue
			}
			if !tests[name] {
				t.Errorf("protocol.md:%d: test %s does not exist", r.line, name)
			}
			if strings.HasPrefix(name, "TestSpec_"+strings.ReplaceAll(r.section, ".", "_")+"_") {
				robotSpecTest = true
			}
		}
		if (r.party == "robot" || r.party == "both") && !robotSpecTest {
			t.Errorf("protocol.md:%d: robot-side row §%s %q has no TestSpec_%s_… test", r.line, r.section, r.quote, strings.ReplaceAll(r.section, ".", "_"))
		}
	}
}
