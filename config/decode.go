package config

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/config/field"
)

// DecodeNode decodes the YAML node n into dst (a pointer), which holds the
// defaults. Before decoding it checks the whole tree against dst's type
// and reports every problem at once, each as a *field.Error under path:
// unknown keys (with a "did you mean" suggestion), values of the wrong
// kind (naming the field), wrong shapes. Numbers given as quoted strings
// ("20") are accepted for numeric fields, and "true"/"false" for booleans.
// A struct's inline map accepts only the keys in extra.
func DecodeNode(n *yaml.Node, path string, dst any, extra ...string) error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	w := walker{extra: extra}
	w.walk(n, reflect.TypeOf(dst).Elem(), path, 0)
	if len(w.errs) > 0 {
		return w.errs.Err()
	}
	if err := n.Decode(dst); err != nil {
		return &field.Error{Path: orRoot(path), Problem: cleanYAMLError(err), Line: n.Line}
	}
	return nil
}

// DecodeSection decodes the top-level section name of extra (Config.Extra)
// into dst like DecodeNode; it reports whether the section was present.
func DecodeSection(extra map[string]yaml.Node, name string, dst any) (bool, error) {
	n, ok := extra[name]
	if !ok {
		return false, nil
	}
	return true, DecodeNode(&n, name, dst)
}

func orRoot(p string) string {
	if p == "" {
		return "(top level)"
	}
	return p
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
var nodeType = reflect.TypeFor[yaml.Node]()

type walker struct {
	extra []string
	errs  field.List
	nodes int // visited, bounded: aliases can make a small file a huge tree
}

// maxNodes bounds the nodes a check visits (alias expansion included).
const maxNodes = 20000

func (w *walker) bad(n *yaml.Node, path, value, problem, hint string) {
	w.errs = append(w.errs, &field.Error{Path: orRoot(path), Value: value, Problem: problem, Hint: hint, Line: n.Line})
}

// scalarValue formats a scalar for a message, quoted when the user quoted
// it or it is not a plain number.
func scalarValue(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return ""
	}
	if n.Tag == "!!str" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string, depth int) {
	if w.nodes++; w.nodes > maxNodes {
		if w.nodes == maxNodes+1 {
			w.bad(n, path, "", "the document expands to too many values (aliases?)", "")
		}
		return
	}
	if depth > 64 {
		w.bad(n, path, "", "nested too deeply", "")
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	if t == nodeType || t.Kind() == reflect.Interface {
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// The type decodes itself: a trial decode gives its verdict.
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			w.bad(n, path, scalarValue(n), cleanYAMLError(err), "")
		}
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // keeps the default
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(n, t.Elem(), path, depth+1)
	case reflect.Struct:
		w.walkStruct(n, t, path, depth)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.bad(n, path, scalarValue(n), "want a mapping (key: value lines), got "+kindName(n), "")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), field.Join(path, n.Content[i].Value), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			w.bad(n, path, scalarValue(n), "want a list, got "+kindName(n), "")
			return
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	default:
		w.walkScalar(n, t, path)
	}
}

// yamlFields lists a struct type's YAML keys (inline structs flattened)
// and whether it has an inline map for other keys.
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, inlineMap bool) {
	fields = map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Map {
				inlineMap = true
				continue
			}
			sub, m := yamlFields(ft)
			for k, v := range sub {
				fields[k] = v
			}
			inlineMap = inlineMap || m
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields, inlineMap
}

func (w *walker) walkStruct(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		w.bad(n, path, scalarValue(n), "want a mapping (key: value lines), got "+kindName(n), "")
		return
	}
	fields, inlineMap := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if ft, ok := fields[k.Value]; ok {
			w.walk(v, ft, field.Join(path, k.Value), depth+1)
			continue
		}
		if inlineMap && contains(w.extra, k.Value) {
			continue
		}
		known := make([]string, 0, len(fields)+len(w.extra))
		for name := range fields {
			known = append(known, name)
		}
		if inlineMap {
			known = append(known, w.extra...)
		}
		sort.Strings(known)
		hint := "known keys: " + strings.Join(known, ", ")
		if s := field.Suggest(k.Value, known); s != "" {
			hint = "did you mean " + s + "?"
		}
		w.errs = append(w.errs, &field.Error{Path: field.Join(path, k.Value), Problem: "unknown key", Hint: hint, Line: k.Line})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (w *walker) walkScalar(n *yaml.Node, t reflect.Type, path string) {
	want := map[reflect.Kind]string{
		reflect.Bool: "want true or false", reflect.String: "want a text value",
		reflect.Float32: "want a number", reflect.Float64: "want a number",
	}[t.Kind()]
	if want == "" {
		want = "want a whole number"
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr {
			want = "want a whole number, 0 or more"
		}
	}
	if t == reflect.TypeFor[time.Duration]() {
		want = "want a duration such as 500ms or 2s"
	}
	if n.Kind != yaml.ScalarNode {
		w.bad(n, path, "", want+", got "+kindName(n), "")
		return
	}
	isInt := t.Kind() >= reflect.Int && t.Kind() <= reflect.Uintptr && t != reflect.TypeFor[time.Duration]()
	if isInt && n.Tag == "!!float" {
		// yaml.v3 would silently truncate 2.5 to 2.
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != float64(int64(f)) {
			w.bad(n, path, scalarValue(n), want, "")
			return
		}
	}
	if n.Decode(reflect.New(t).Interface()) == nil {
		return
	}
	// A quoted number for a numeric field, or "true"/"false" for a
	// boolean, is unambiguous: accept it.
	if n.Tag == "!!str" {
		v := strings.TrimSpace(n.Value)
		retag := ""
		switch t.Kind() {
		case reflect.Bool:
			if l := strings.ToLower(v); l == "true" || l == "false" {
				retag, v = "!!bool", l
			}
		case reflect.Float32, reflect.Float64:
			if _, err := strconv.ParseFloat(v, 64); err == nil {
				retag = "!!float"
			}
		default:
			if _, err := strconv.ParseInt(v, 10, 64); err == nil {
				retag = "!!int"
			}
		}
		if retag != "" {
			saved := *n
			n.Tag, n.Value, n.Style = retag, v, 0
			if n.Decode(reflect.New(t).Interface()) == nil {
				return
			}
			*n = saved
		}
	}
	problem := want
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64 && n.Tag == "!!int" {
		problem = "out of range for this field"
	}
	w.bad(n, path, scalarValue(n), problem, "")
}

// cleanYAMLError strips yaml.v3's prefixes from an error message.
func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "yaml: ")
	return strings.ReplaceAll(s, "\n", "; ")
}

// parseYAML parses data into a node tree; syntax errors name their line.
func parseYAML(r io.Reader) (*yaml.Node, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, &field.Error{Path: "(file)", Problem: "not valid YAML: " + cleanYAMLError(err)}
	}
	return &n, nil
}
