package protocol

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocExamples keeps docs/protocol.md honest: every ```json block must
// decode in at least one direction, and every JSON line of the example
// session must decode in its direction (or be rejected, if marked "!").
func TestDocExamples(t *testing.T) {
	f, err := os.Open("../docs/protocol.md")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("docs/protocol.md not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^(R→G|G→R)(!?) (\{.*\})\s*$`)
	var (
		block    strings.Builder
		inJSON   bool
		inText   bool
		blocks   int
		lines    int
		lineNo   int
		blockPos int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lineNo++
		l := sc.Text()
		switch {
		case l == "```json":
			inJSON, blockPos = true, lineNo
			block.Reset()
			continue
		case l == "```text":
			inText = true
			continue
		case l == "```":
			if inJSON {
				blocks++
				data := []byte(block.String())
				_, errR := DecodeFromRobot(data)
				_, errG := DecodeFromGateway(data)
				if errR != nil && errG != nil {
					t.Errorf("protocol.md:%d: json example decodes in neither direction:\n  robot: %v\n  gateway: %v", blockPos, errR, errG)
				}
			}
			inJSON, inText = false, false
			continue
		}
		if inJSON {
			block.WriteString(l)
			block.WriteByte('\n')
			continue
		}
		if !inText {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		lines++
		decode := DecodeFromRobot
		if m[1] == "G→R" {
			decode = DecodeFromGateway
		}
		_, err := decode([]byte(m[3]))
		switch {
		case m[2] == "" && err != nil:
			t.Errorf("protocol.md:%d: %s message does not decode: %v", lineNo, m[1], err)
		case m[2] == "!" && err == nil:
			t.Errorf("protocol.md:%d: %s message marked invalid decodes fine", lineNo, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if blocks < 20 || lines < 25 {
		t.Errorf("found %d json blocks and %d session lines; the document's examples were not recognised", blocks, lines)
	}
}
