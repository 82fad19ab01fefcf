package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc edits TOML in place (Codex's config.toml). go-toml's decoder
// checks the whole file and decodes values; its unstable parser gives the
// byte range of every table header and key/value line, and the edits are
// cuts and insertions of whole lines at those ranges, so that every byte
// the edit is not about (comments, blank lines, quoting, key order) stays.
type tomlDoc struct {
	data  []byte
	exprs []tomlExpr
}

// A tomlExpr is one top-level expression of a TOML file: a table header or
// a key/value line.
type tomlExpr struct {
	kind unstable.Kind // Table, ArrayTable or KeyValue
	// path is a header's table, or a key/value's table and key.
	path []string
	// key is a key/value's own (dotted) key.
	key []string
	// start is the header's '[' or the key's first byte; end is just past
	// its line's content (trailing comment included, newline not).
	start, end int
	// lineStart is the start of its first line; lineEnd is just past the
	// newline ending its last line.
	lineStart, lineEnd int
	// valStart and valEnd are a key/value's value.
	valStart, valEnd int
	// inline are an inline table value's members.
	inline []tomlMember
}

// A tomlMember is one key/value of an inline table.
type tomlMember struct {
	key        string // its first key part
	start, end int
}

func parseTOML(data []byte) (document, error) {
	if bytes.HasPrefix(data, bom) {
		return nil, errors.New("the file starts with a byte order mark; remove it and try again")
	}
	d := &tomlDoc{data: data}
	if err := d.parse(); err != nil {
		return nil, err
	}
	return d, nil
}

// tomlError is err of go-toml with its line and column.
func tomlError(err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("not valid TOML: line %d, column %d: %s", row, col, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return fmt.Errorf("not valid TOML: %w", err)
}

// parse checks d.data and lists its expressions.
func (d *tomlDoc) parse() error {
	var all map[string]any
	if err := toml.Unmarshal(d.data, &all); err != nil {
		return tomlError(err)
	}
	var p unstable.Parser
	p.Reset(d.data)
	d.exprs = d.exprs[:0]
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		e := tomlExpr{kind: n.Kind}
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, first, last := keyParts(n.Key())
			table = keys
			e.path = keys
			e.start = bytes.LastIndexByte(d.data[:first], '[')
			if n.Kind == unstable.ArrayTable {
				e.start = bytes.LastIndex(d.data[:first], []byte("[["))
			}
			close := last + bytes.IndexByte(d.data[last:], ']')
			if n.Kind == unstable.ArrayTable {
				close++
			}
			e.end, e.lineEnd = lineTail(d.data, close+1)
		case unstable.KeyValue:
			keys, _, _ := keyParts(n.Key())
			e.key = keys
			e.path = append(slices.Clone(table), keys...)
			e.start = int(n.Raw.Offset)
			v := n.Value()
			e.valStart, e.valEnd = int(v.Raw.Offset), int(n.Raw.Offset+n.Raw.Length)
			if v.Kind == unstable.InlineTable {
				it := v.Children()
				for it.Next() {
					c := it.Node()
					if c.Kind != unstable.KeyValue {
						continue
					}
					ck, _, _ := keyParts(c.Key())
					e.inline = append(e.inline, tomlMember{key: ck[0], start: int(c.Raw.Offset), end: int(c.Raw.Offset + c.Raw.Length)})
				}
			}
			e.end, e.lineEnd = lineTail(d.data, e.valEnd)
		default:
			continue
		}
		e.lineStart = bytes.LastIndexByte(d.data[:e.start], '\n') + 1
		d.exprs = append(d.exprs, e)
	}
	if err := p.Error(); err != nil {
		return tomlError(err)
	}
	return nil
}

// keyParts returns a dotted key's parts, the offset of its first part and
// the end of its last.
func keyParts(it unstable.Iterator) (keys []string, first, last int) {
	first = -1
	for it.Next() {
		k := it.Node()
		keys = append(keys, string(k.Data))
		if first < 0 {
			first = int(k.Raw.Offset)
		}
		last = int(k.Raw.Offset + k.Raw.Length)
	}
	return keys, first, last
}

// lineTail returns, for a line whose expression ends at i, the end of its
// content (a trailing comment included) and the end of the line with its
// newline.
func lineTail(data []byte, i int) (end, lineEnd int) {
	nl := bytes.IndexByte(data[i:], '\n')
	if nl < 0 {
		return len(data), len(data)
	}
	end = i + nl
	if end > i && data[end-1] == '\r' {
		end--
	}
	return end, i + nl + 1
}

func decodeTOMLValue(text string) (any, error) {
	var all map[string]any
	if err := toml.Unmarshal([]byte(text), &all); err != nil {
		return nil, tomlError(err)
	}
	// The first expression says where the value is: an entry's text is
	// its table header, or its own key and inline table.
	var p unstable.Parser
	p.Reset([]byte(text))
	if !p.NextExpression() {
		return nil, errors.New("no TOML value")
	}
	n := p.Expression()
	if n.Kind != unstable.Table && n.Kind != unstable.KeyValue {
		return nil, fmt.Errorf("a TOML %s is not an entry", n.Kind)
	}
	path, _, _ := keyParts(n.Key())
	var v any = all
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no TOML value at %s", where(path))
		}
		v = m[k]
	}
	return plainTOML(v), nil
}

// plainTOML turns go-toml's dates and times into strings, so that an
// entry's fields hold only the kinds a JSON entry's do.
func plainTOML(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = plainTOML(x)
		}
	case []any:
		for i, x := range t {
			t[i] = plainTOML(x)
		}
	case time.Time:
		return t.Format(time.RFC3339Nano)
	case toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return fmt.Sprint(t)
	}
	return v
}

func (d *tomlDoc) bytes() []byte { return slices.Clone(d.data) }

// A tomlEntry is where one server's entry stands: its table with its
// sub-tables, or one key/value holding an inline table.
type tomlEntry struct {
	name string
	// exprs are the indexes of its expressions in d.exprs: the table
	// header first, or the single key/value.
	exprs []int
}

func (t *tomlEntry) isTable(d *tomlDoc) bool { return d.exprs[t.exprs[0]].kind == unstable.Table }

// span is the entry's text: from its first expression to the end of its
// last line's content, with the comment lines right below it (up to a
// blank line, which parts them from those above the next table's
// header): a comment between the header and keys connect removes ends up
// there.
func (t *tomlEntry) span(d *tomlDoc) (int, int) {
	first, last := d.exprs[t.exprs[0]], d.exprs[t.exprs[len(t.exprs)-1]]
	if first.kind == unstable.KeyValue {
		return first.start, first.valEnd
	}
	end := last.end
	for next := last.lineEnd; next < len(d.data); {
		line := d.data[next:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if !bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("#")) {
			break
		}
		end, next = lineTail(d.data, next)
	}
	return first.start, end
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// find locates the entries of the servers map at path.
func (d *tomlDoc) find(path []string) ([]*tomlEntry, error) {
	var out []*tomlEntry
	byName := map[string]*tomlEntry{}
	var open *tomlEntry // the table entry whose expressions run on
	for i, e := range d.exprs {
		in := hasPrefix(e.path, path)
		switch {
		case e.kind == unstable.ArrayTable && in:
			return nil, fmt.Errorf("%s must be tables of servers, not an array of tables [[%s]]", where(path), strings.Join(e.path, "."))
		case e.kind == unstable.Table && in && len(e.path) > len(path):
			name := e.path[len(path)]
			t := byName[name]
			switch {
			case open != nil && open.name == name:
				open.exprs = append(open.exprs, i)
			case t != nil:
				return nil, fmt.Errorf("server %q of %s is written in parts apart in the file (line %d); put its tables together", name, where(path), d.line(e.start))
			case len(e.path) > len(path)+1:
				return nil, fmt.Errorf("server %q of %s has sub-tables but no [%s] table before them (line %d)", name, where(path), strings.Join(e.path[:len(path)+1], "."), d.line(e.start))
			default:
				open = &tomlEntry{name: name, exprs: []int{i}}
				byName[name] = open
				out = append(out, open)
			}
		case e.kind == unstable.Table:
			open = nil
		case open != nil:
			open.exprs = append(open.exprs, i) // a key/value of its tables
		case in && len(e.path) == len(path)+1:
			name := e.path[len(path)]
			if e.inline == nil && d.data[e.valStart] != '{' {
				return nil, fmt.Errorf("server %q of %s must be a table (line %d)", name, where(path), d.line(e.start))
			}
			if byName[name] != nil {
				return nil, fmt.Errorf("server %q of %s is defined twice", name, where(path))
			}
			t := &tomlEntry{name: name, exprs: []int{i}}
			byName[name] = t
			out = append(out, t)
		case in && len(e.path) > len(path)+1:
			return nil, fmt.Errorf("server %q of %s is set by the dotted key %s (line %d); write it as a [%s] table",
				e.path[len(path)], where(path), strings.Join(e.key, "."), d.line(e.start), strings.Join(e.path[:len(path)+1], "."))
		case in:
			return nil, fmt.Errorf("%s must be tables of servers, not an inline table (line %d)", where(path), d.line(e.start))
		}
	}
	return out, nil
}

func (d *tomlDoc) line(offset int) int { return bytes.Count(d.data[:offset], []byte("\n")) + 1 }

func (d *tomlDoc) entries(m serverMap) ([]*entry, error) {
	if m.list || slices.Contains(m.path, "*") {
		return nil, errors.New("TOML files keep their servers as tables")
	}
	ts, err := d.find(m.path)
	if err != nil {
		return nil, err
	}
	out := make([]*entry, 0, len(ts))
	for _, t := range ts {
		e := &entry{keys: slices.Clone(m.path), name: t.name}
		if err := d.fill(e, t); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// fill sets e's text and fields from where t stands.
func (d *tomlDoc) fill(e *entry, t *tomlEntry) error {
	start, end := t.span(d)
	e.text = string(d.data[start:end])
	v, err := decodeTOMLValue(e.text)
	if err != nil {
		return fmt.Errorf("server %q of %s: %w", e.name, where(e.keys), err)
	}
	f, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("server %q of %s must be a table", e.name, where(e.keys))
	}
	e.fields = f
	return nil
}

// locate finds e where it now stands: an edit moves the entries after it.
func (d *tomlDoc) locate(e *entry) (*tomlEntry, error) {
	ts, err := d.find(e.keys)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.name == e.name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("server %q of %s is gone", e.name, where(e.keys))
}

// refresh re-reads the file after an edit, and e.
func (d *tomlDoc) refresh(e *entry) error {
	if err := d.parse(); err != nil {
		return fmt.Errorf("the edit of server %q left %w", e.name, err)
	}
	t, err := d.locate(e)
	if err != nil {
		return err
	}
	return d.fill(e, t)
}

// splice replaces data[start:end] with s.
func (d *tomlDoc) splice(start, end int, s string) {
	d.data = slices.Concat(d.data[:start:start], []byte(s), d.data[end:])
}

func (d *tomlDoc) restore(e *entry, text string) error {
	t, err := d.locate(e)
	if err != nil {
		return err
	}
	if t.isTable(d) != strings.HasPrefix(strings.TrimSpace(text), "[") {
		return d.restoreMoved(e, text)
	}
	start, end := t.span(d)
	d.splice(start, end, text)
	return d.refresh(e)
}

func (d *tomlDoc) rewrite(e *entry, drop func(string) bool, add []member) error {
	t, err := d.locate(e)
	if err != nil {
		return err
	}
	if !t.isTable(d) {
		return d.rewriteInline(e, t, drop, add)
	}
	// A key it writes goes wherever it was.
	drop = dropping(drop, add)
	head := d.exprs[t.exprs[0]]
	nl := "\n"
	if head.end < len(d.data) && d.data[head.end] == '\r' {
		nl = "\r\n"
	}
	type cut struct{ start, end int }
	var cuts []cut
	indent, indented := "", false
	inSub, dropSub := false, false
	for j, i := range t.exprs[1:] {
		x := d.exprs[i]
		switch {
		case x.kind == unstable.Table:
			inSub = true
			dropSub = drop(x.path[len(e.keys)+1])
			if dropSub {
				// The blank lines above a table go with it.
				floor := d.exprs[t.exprs[j]].lineEnd
				start := x.lineStart
				for start > floor {
					prev := bytes.LastIndexByte(d.data[:start-1], '\n') + 1
					if prev < floor || len(bytes.TrimSpace(d.data[prev:start])) != 0 {
						break
					}
					start = prev
				}
				cuts = append(cuts, cut{start, x.lineEnd})
			}
		case inSub:
			if dropSub {
				cuts[len(cuts)-1].end = x.lineEnd
			}
		default:
			if !indented {
				indent, indented = string(d.data[x.lineStart:x.start]), true
			}
			if drop(x.key[0]) {
				cuts = append(cuts, cut{x.lineStart, x.lineEnd})
			}
		}
	}
	var b strings.Builder
	if head.lineEnd == head.end { // the header ends the file
		b.WriteString(nl)
	}
	for _, a := range add {
		v, err := tomlLiteral(a.value)
		if err != nil {
			return fmt.Errorf("server %q: %w", e.name, err)
		}
		b.WriteString(indent + tomlKey(a.key) + " = " + v + nl)
	}
	eol := bytes.HasSuffix(d.data, []byte("\n"))
	for i := len(cuts) - 1; i >= 0; i-- {
		d.splice(cuts[i].start, cuts[i].end, "")
	}
	d.splice(head.lineEnd, head.lineEnd, b.String())
	if !eol { // the entry's last line ended the file, and ends it still
		d.data = bytes.TrimSuffix(d.data, []byte(nl))
	}
	return d.refresh(e)
}

// dropping is drop, and the keys of add.
func dropping(drop func(string) bool, add []member) func(string) bool {
	return func(k string) bool {
		return drop(k) || slices.ContainsFunc(add, func(m member) bool { return m.key == k })
	}
}

// rewriteInline rewrites a server written as one inline table.
func (d *tomlDoc) rewriteInline(e *entry, t *tomlEntry, drop func(string) bool, add []member) error {
	x := d.exprs[t.exprs[0]]
	if bytes.ContainsAny(d.data[x.valStart:x.valEnd], "\r\n") {
		return fmt.Errorf("server %q is an inline table over several lines; write it as a [%s] table",
			e.name, strings.Join(append(slices.Clone(e.keys), e.name), "."))
	}
	drop = dropping(drop, add)
	var parts []string
	for _, a := range add {
		v, err := tomlLiteral(a.value)
		if err != nil {
			return fmt.Errorf("server %q: %w", e.name, err)
		}
		parts = append(parts, tomlKey(a.key)+" = "+v)
	}
	for _, m := range x.inline {
		if !drop(m.key) {
			parts = append(parts, string(d.data[m.start:m.end]))
		}
	}
	v := "{}"
	if len(parts) > 0 {
		v = "{ " + strings.Join(parts, ", ") + " }"
	}
	d.splice(x.valStart, x.valEnd, v)
	return d.refresh(e)
}

// tomlLiteral is v (a string, bool, []string or map[string]string) as a
// one-line TOML value; a map is an inline table.
func tomlLiteral(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return tomlString(t), nil
	case bool:
		return fmt.Sprint(t), nil
	case []string:
		q := make([]string, len(t))
		for i, s := range t {
			q[i] = tomlString(s)
		}
		return "[" + strings.Join(q, ", ") + "]", nil
	case map[string]string:
		if len(t) == 0 {
			return "{}", nil
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := make([]string, len(keys))
		for i, k := range keys {
			q[i] = tomlKey(k) + " = " + tomlString(t[k])
		}
		return "{ " + strings.Join(q, ", ") + " }", nil
	}
	return "", fmt.Errorf("cannot write %T in TOML", v)
}

// tomlKey is k bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if isPlainKey(k) {
		return k
	}
	return tomlString(k)
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
