package hosts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML editor's rewrites of an entry: its members replaced, or its
// text put back.

// replace puts text in place of s's value and reads e again.
func (d *yamlDoc) replace(e *entry, s yamlSpan, text string) error {
	data := make([]byte, 0, len(d.data)-(s.end-s.start)+len(text))
	data = append(data, d.data[:s.start]...)
	data = append(data, text...)
	data = append(data, d.data[s.end:]...)
	old := d.data
	d.data = data
	ns, err := d.locate(e)
	if err == nil {
		err = d.fill(e, ns)
	}
	if err != nil {
		d.data = old
		return fmt.Errorf("server %q of %s: the edit does not read back: %w", e.name, where(e.keys), err)
	}
	return nil
}

func (d *yamlDoc) rewrite(e *entry, drop func(string) bool, add []member) error {
	s, err := d.locate(e)
	if err != nil {
		return err
	}
	var adds []string
	for _, a := range add {
		v, err := yamlFlowValue(a.value)
		if err != nil {
			return err
		}
		adds = append(adds, yamlScalar(a.key)+": "+v)
	}
	if s.flow {
		return d.rewriteFlow(e, s, drop, adds)
	}
	x := newYAMLIndex(d.data, nil)
	firstLine := s.val.Content[0].Line
	lastLine := firstLine
	for n := firstLine; n <= len(x.lines) && x.lineEnd(n) <= s.end; n++ {
		lastLine = n
	}
	// Each member's lines: from its key to its last line of content;
	// comments and blank lines between members stay.
	gone := map[int]bool{}
	pairs := s.val.Content
	for i := 0; i+1 < len(pairs); i += 2 {
		if !drop(pairs[i].Value) {
			continue
		}
		upto := lastLine
		if i+2 < len(pairs) {
			upto = pairs[i+2].Line - 1
		}
		for n := pairs[i].Line; n <= x.lastContent(pairs[i].Line, upto); n++ {
			gone[n] = true
		}
	}
	var b strings.Builder
	pad := strings.Repeat(" ", s.indent)
	for _, a := range adds {
		b.WriteString(pad + a + d.eol)
	}
	for n := firstLine; n <= lastLine; n++ {
		if gone[n] {
			continue
		}
		start, end := x.lines[n-1], x.lineEnd(n)
		if n == firstLine {
			start = s.start
			b.WriteString(pad)
		}
		b.Write(d.data[start:end])
	}
	text := b.String()
	if lastLine == len(x.lines) && !bytes.HasSuffix(d.data[s.start:s.end], []byte("\n")) {
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
	}
	return d.replace(e, s, text[s.indent:])
}

// rewriteFlow rewrites an entry written as {k: v, …}: on one line, with
// the members kept as they were written.
func (d *yamlDoc) rewriteFlow(e *entry, s yamlSpan, drop func(string) bool, adds []string) error {
	_, commas, err := scanFlow(d.data, s.start)
	if err != nil {
		return err
	}
	x := newYAMLIndex(d.data, nil)
	members := adds
	pairs := s.val.Content
	for i := 0; i+1 < len(pairs); i += 2 {
		if drop(pairs[i].Value) {
			continue
		}
		from := x.offset(pairs[i].Line, pairs[i].Column)
		to := s.end - 1
		for _, c := range commas {
			if c > from {
				to = c
				break
			}
		}
		members = append(members, strings.TrimSpace(string(d.data[from:to])))
	}
	return d.replace(e, s, "{"+strings.Join(members, ", ")+"}")
}

func (d *yamlDoc) restore(e *entry, text string) error {
	s, err := d.locate(e)
	if err != nil {
		return err
	}
	if v, err := decodeYAMLValue(text); err != nil {
		return fmt.Errorf("the saved entry of server %q: %w", e.name, err)
	} else if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the saved entry of server %q is not a mapping", e.name)
	}
	body := strings.TrimLeft(text, " ")
	savedIndent := len(text) - len(body)
	savedFlow := strings.HasPrefix(body, "{")
	var out string
	switch {
	case savedFlow && s.flow:
		out = body
	case savedFlow:
		// A block entry written back as it was: {…} where its keys were.
		out = body
		if end := d.data[s.start:s.end]; bytes.HasSuffix(end, []byte("\n")) {
			out += d.eol
		}
	case !s.flow:
		out = reindent(body, savedIndent, s.indent)
	case s.inFlow:
		return fmt.Errorf("server %q of %s: its saved entry is in block style, and it now stands in a flow collection", e.name, where(e.keys))
	default:
		// A flow entry put back as the block it was: a list item's
		// first key stays on its dash line; a mapping's value goes on the
		// lines below its key.
		x := newYAMLIndex(d.data, nil)
		col := s.val.Column - 1
		if s.list {
			out = reindent(body, savedIndent, col)
		} else {
			line := x.line(s.val.Line)
			ind := len(line) - len(strings.TrimLeft(line, " ")) + 2
			out = d.eol + strings.Repeat(" ", ind) + reindent(body, savedIndent, ind)
			for s.start > 0 && (d.data[s.start-1] == ' ' || d.data[s.start-1] == '\t') {
				s.start-- // no space after the key's colon
			}
		}
		out = strings.TrimRight(out, "\r\n")
	}
	return d.replace(e, s, out)
}

// reindent moves the lines after the first of body from indent from to
// indent to; a line with less space loses what it has.
func reindent(body string, from, to int) string {
	if from == to {
		return body
	}
	lines := strings.SplitAfter(body, "\n")
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if strings.TrimSpace(trimmed) == "" {
			continue
		}
		cut := min(from, len(l)-len(trimmed))
		lines[i] = strings.Repeat(" ", to) + l[cut:]
	}
	return strings.Join(lines, "")
}

// yamlFlowValue writes a member's value on one line: a scalar, [a, b] or
// {K: v}.
func yamlFlowValue(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return yamlScalar(t), nil
	case bool:
		return strconv.FormatBool(t), nil
	case []string:
		parts := make([]string, len(t))
		for i, s := range t {
			parts[i] = yamlScalar(s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case map[string]string:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = yamlScalar(k) + ": " + yamlScalar(t[k])
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("no YAML for a value of type %T", v)
}

// yamlScalar is s plain when it reads back as the same string both as a
// mapping's value and as a flow list's item, else double-quoted.
func yamlScalar(s string) string {
	if plainSafe(s) {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

func plainSafe(s string) bool {
	if s == "" || s != strings.TrimSpace(s) || strings.ContainsAny(s, "\n\r\t#,[]{}") {
		return false
	}
	if strings.ContainsRune("?:!&*|>%@'\"`", rune(s[0])) {
		return false
	}
	var m map[string]any
	if yaml.Unmarshal([]byte("k: "+s), &m) != nil || m["k"] != s {
		return false
	}
	var l []any
	if yaml.Unmarshal([]byte("["+s+"]"), &l) != nil || len(l) != 1 || l[0] != s {
		return false
	}
	return true
}
