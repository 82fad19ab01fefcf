package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// yamlDoc edits YAML in place (Goose's and Continue's config.yaml). The
// yaml package's node tree says where each key and value starts; an edit
// replaces the lines of one entry (or the braces of one written in flow
// style, {cmd: x}) and leaves every other byte as it was.
type yamlDoc struct {
	data []byte
	eol  string
}

// A yamlLoc is the editor's handle on an entry: the map it is found in and
// its index there, located again in the text as it stands at each edit.
type yamlLoc struct {
	sm    serverMap
	index int
}

// A yamlSpan is where an entry's value stands in the text.
type yamlSpan struct {
	keys []string
	name string
	val  *yaml.Node
	// start and end are the byte offsets of the value: from its first key
	// to the end of its last line (block style), or its braces (flow).
	start, end int
	// indent is the column (from 0) of the value's first key; the text
	// before it on its line (indent, or a list item's "- ") stays.
	indent int
	flow   bool
	// list is set for a list item; inFlow when the entry stands inside a
	// collection written in flow style.
	list, inFlow bool
	// key is a mapping entry's key, nil for a list item; parent is the
	// collection the entry stands in.
	key, parent *yaml.Node
}

func parseYAML(data []byte) (*yamlDoc, error) {
	if bytes.HasPrefix(data, bom) {
		return nil, errors.New("the file starts with a byte order mark; remove it and try again")
	}
	d := &yamlDoc{data: data, eol: "\n"}
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		d.eol = "\r\n"
	}
	top, err := d.top()
	if err != nil {
		return nil, err
	}
	if top != nil && top.Kind != yaml.MappingNode && !isNull(top) {
		return nil, fmt.Errorf("not a YAML mapping at the top (line %d)", top.Line)
	}
	return d, nil
}

// top parses the text and returns its top node, nil for an empty file.
func (d *yamlDoc) top() (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(d.data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// decodeYAMLValue decodes an entry's text: a mapping, in block or flow
// style, with the indent it had in its file.
func decodeYAMLValue(text string) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("empty YAML value")
	}
	return yamlValue(doc.Content[0])
}

// yamlValue is n decoded as the JSON editor decodes its values: strings,
// int64 or float64, bool, nil, []any and map[string]any, so that the two
// marshal alike.
func yamlValue(n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return plainValue(v), nil
}

func plainValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = plainValue(x)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = plainValue(x)
		}
		return out
	case []any:
		for i, x := range t {
			t[i] = plainValue(x)
		}
		return t
	case int:
		return int64(t)
	case uint64:
		if t <= math.MaxInt64 {
			return int64(t)
		}
		return float64(t)
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return strconv.FormatFloat(t, 'g', -1, 64)
		}
		return t
	}
	return v
}

func (d *yamlDoc) bytes() []byte { return d.data }

func (d *yamlDoc) entries(m serverMap) ([]*entry, error) {
	spans, err := d.spans(m)
	if err != nil {
		return nil, err
	}
	out := make([]*entry, len(spans))
	for i, s := range spans {
		e := &entry{node: yamlLoc{sm: m, index: i}}
		if err := d.fill(e, s); err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// fill sets e from s as the text now stands.
func (d *yamlDoc) fill(e *entry, s yamlSpan) error {
	v, err := yamlValue(s.val)
	if err != nil {
		return fmt.Errorf("server %q of %s: %w", s.name, where(s.keys), err)
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("server %q of %s must be a mapping", s.name, where(s.keys))
	}
	e.keys, e.name, e.fields, e.text = s.keys, s.name, fields, d.text(s)
	return nil
}

// text is an entry's text: a flow mapping as written, or the lines of a
// block mapping with what stands before its first key on the first line
// (a list item's "- ") made spaces, so that it reads as that mapping.
func (d *yamlDoc) text(s yamlSpan) string {
	if s.flow {
		return string(d.data[s.start:s.end])
	}
	return strings.Repeat(" ", s.indent) + string(d.data[s.start:s.end])
}

// spans finds the entries of the map at m.
func (d *yamlDoc) spans(m serverMap) ([]yamlSpan, error) {
	top, err := d.top()
	if err != nil {
		return nil, err
	}
	if top == nil || top.Kind != yaml.MappingNode {
		return nil, nil
	}
	idx := newYAMLIndex(d.data, top)
	type found struct {
		keys []string
		val  *yaml.Node
	}
	cur := []found{{val: top}}
	for _, k := range m.path {
		var next []found
		for _, f := range cur {
			if f.val.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(f.val.Content); i += 2 {
				name := f.val.Content[i].Value
				if k == "*" || k == name {
					next = append(next, found{keys: append(append([]string(nil), f.keys...), name), val: f.val.Content[i+1]})
				}
			}
		}
		cur = next
	}
	var out []yamlSpan
	for _, f := range cur {
		v := f.val
		switch {
		case isNull(v):
			continue // extensions: (nothing yet)
		case v.Kind == yaml.MappingNode && !m.list:
			for i := 0; i+1 < len(v.Content); i += 2 {
				s, err := idx.span(f.keys, v.Content[i].Value, v.Content[i+1], v)
				if err != nil {
					return nil, err
				}
				s.key = v.Content[i]
				out = append(out, s)
			}
		case v.Kind == yaml.SequenceNode && m.list:
			for i, item := range v.Content {
				if item.Kind != yaml.MappingNode {
					return nil, fmt.Errorf("%s[%d] must be a mapping (line %d)", where(f.keys), i, item.Line)
				}
				name := ""
				for j := 0; j+1 < len(item.Content); j += 2 {
					if item.Content[j].Value == "name" && item.Content[j+1].Kind == yaml.ScalarNode {
						name = item.Content[j+1].Value
					}
				}
				s, err := idx.span(f.keys, name, item, v)
				if err != nil {
					return nil, err
				}
				s.list = true
				out = append(out, s)
			}
		case m.list:
			return nil, fmt.Errorf("%s must be a list (line %d)", where(f.keys), v.Line)
		default:
			return nil, fmt.Errorf("%s must be a mapping of servers (line %d)", where(f.keys), v.Line)
		}
	}
	return out, nil
}

// A yamlIndex knows where the lines of a text start and the nodes of its
// tree in the order they stand.
type yamlIndex struct {
	data  []byte
	lines []int // byte offset of each line's start
	order []*yaml.Node
	at    map[*yaml.Node]int // index in order
	// last is the index in order past each node's subtree.
	last map[*yaml.Node]int
}

func newYAMLIndex(data []byte, top *yaml.Node) *yamlIndex {
	x := &yamlIndex{data: data, lines: []int{0}, at: map[*yaml.Node]int{}, last: map[*yaml.Node]int{}}
	for i, c := range data {
		if c == '\n' {
			x.lines = append(x.lines, i+1)
		}
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		x.at[n] = len(x.order)
		x.order = append(x.order, n)
		for _, c := range n.Content {
			walk(c)
		}
		x.last[n] = len(x.order)
	}
	if top != nil {
		walk(top)
	}
	return x
}

// offset is the byte offset of line and column (from 1, in characters).
func (x *yamlIndex) offset(line, col int) int {
	if line < 1 {
		return 0
	}
	if line > len(x.lines) {
		return len(x.data)
	}
	off := x.lines[line-1]
	for c := 1; c < col && off < len(x.data) && x.data[off] != '\n'; c++ {
		_, size := utf8.DecodeRune(x.data[off:])
		off += size
	}
	return off
}

// line is the text of line n (from 1), without its end.
func (x *yamlIndex) line(n int) string {
	start := x.lines[n-1]
	end := len(x.data)
	if n < len(x.lines) {
		end = x.lines[n]
	}
	return strings.TrimRight(string(x.data[start:end]), "\r\n")
}

// content reports whether line n holds more than space and a comment.
func (x *yamlIndex) content(n int) bool {
	l := strings.TrimSpace(x.line(n))
	if l == "" || strings.HasPrefix(l, "#") {
		return false
	}
	return true
}

// lastContent is the last line from first to upto (both included) that
// holds content, ending where a document marker (---, ...) stands.
func (x *yamlIndex) lastContent(first, upto int) int {
	last := first
	for n := first + 1; n <= upto && n <= len(x.lines); n++ {
		l := x.line(n)
		if strings.HasPrefix(l, "---") || strings.HasPrefix(l, "...") {
			break
		}
		if x.content(n) {
			last = n
		}
	}
	return last
}

// lineEnd is the offset past line n's end (its new line included).
func (x *yamlIndex) lineEnd(n int) int {
	if n < len(x.lines) {
		return x.lines[n]
	}
	return len(x.data)
}

// span locates v, an entry's value in parent.
func (x *yamlIndex) span(keys []string, name string, v, parent *yaml.Node) (yamlSpan, error) {
	s := yamlSpan{keys: keys, name: name, val: v, parent: parent, inFlow: parent.Style&yaml.FlowStyle != 0}
	if v.Kind == yaml.AliasNode {
		return s, fmt.Errorf("server %q of %s is an alias (line %d); write it out to connect it", name, where(keys), v.Line)
	}
	if v.Kind != yaml.MappingNode {
		return s, fmt.Errorf("server %q of %s must be a mapping (line %d)", name, where(keys), v.Line)
	}
	if v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 {
		s.flow = true
		s.start = x.offset(v.Line, v.Column)
		if s.start >= len(x.data) || x.data[s.start] != '{' {
			return s, fmt.Errorf("server %q of %s: no { at line %d", name, where(keys), v.Line)
		}
		end, _, err := scanFlow(x.data, s.start)
		if err != nil {
			return s, fmt.Errorf("server %q of %s (line %d): %w", name, where(keys), v.Line, err)
		}
		s.end = end
		return s, nil
	}
	first := v.Content[0]
	s.indent = first.Column - 1
	s.start = x.offset(first.Line, first.Column)
	upto := len(x.lines)
	if j := x.last[v]; j < len(x.order) {
		upto = x.order[j].Line - 1
	}
	s.end = x.lineEnd(x.lastContent(first.Line, upto))
	return s, nil
}

// scanFlow finds the end of the flow collection opening at data[open]: the
// offset past its closing bracket, and the offsets of the commas between
// its members. It knows quotes and comments, nothing more of YAML.
func scanFlow(data []byte, open int) (end int, commas []int, err error) {
	depth := 0
	var last byte // the last byte that is not space, outside comments
	for i := open; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			return 0, nil, errors.New("a comment within a mapping written in flow style; write it in block style to connect it")
		case (c == '"' || c == '\'') && strings.IndexByte("{[,:", last) >= 0:
			j := i + 1
			for ; j < len(data); j++ {
				if c == '"' && data[j] == '\\' {
					j++
					continue
				}
				if data[j] == c {
					if c == '\'' && j+1 < len(data) && data[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(data) {
				return 0, nil, errors.New("an unclosed quote")
			}
			i = j
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1, commas, nil
			}
		case c == ',' && depth == 1:
			commas = append(commas, i)
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			last = c
		}
	}
	return 0, nil, errors.New("an unclosed {")
}

// locate finds e's entry in the text as it now stands.
func (d *yamlDoc) locate(e *entry) (yamlSpan, error) {
	loc := e.node.(yamlLoc)
	spans, err := d.spans(loc.sm)
	if err != nil {
		return yamlSpan{}, err
	}
	if loc.index >= len(spans) || spans[loc.index].name != e.name {
		return yamlSpan{}, fmt.Errorf("server %q of %s is no longer where it was", e.name, where(e.keys))
	}
	return spans[loc.index], nil
}
