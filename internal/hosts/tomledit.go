package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// The TOML editor's removal and insertion of whole entries.

// newline is the file's line ending.
func (d *tomlDoc) newline() string {
	if i := bytes.IndexByte(d.data, '\n'); i > 0 && d.data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// cutLines removes the lines from start to end (line starts), with the
// lines right above them that above reports (comments about them), when
// needBlank only if a blank line (or the file's start) stands above
// those, and the blank lines after them when one stands before, so that
// one blank line still parts what was around them.
func cutLines(data []byte, start, end int, above func(line []byte) bool, needBlank bool) ([]byte, int) {
	lineBefore := func(s int) int { return bytes.LastIndexByte(data[:s-1], '\n') + 1 }
	isBlank := func(s int) bool {
		if s >= len(data) {
			return false
		}
		line := data[s:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		return len(bytes.TrimSpace(line)) == 0
	}
	s := start
	for s > 0 && above(data[lineBefore(s):s]) {
		s = lineBefore(s)
	}
	if !needBlank || s == 0 || isBlank(lineBefore(s)) {
		start = s
	}
	if start == 0 || isBlank(lineBefore(start)) {
		for isBlank(end) {
			end = bytes.IndexByte(data[end:], '\n') + end + 1
			if end <= 0 || end > len(data) {
				end = len(data)
			}
		}
		if end >= len(data) {
			for start > 0 && isBlank(lineBefore(start)) {
				start = lineBefore(start)
			}
		}
	}
	return slices.Concat(data[:start:start], data[end:]), start
}

func (d *tomlDoc) remove(e *entry) error {
	t, err := d.locate(e)
	if err != nil {
		return err
	}
	first := d.exprs[t.exprs[0]]
	end := first.lineEnd
	if t.isTable(d) {
		_, spanEnd := t.span(d)
		_, end = lineTail(d.data, spanEnd)
	}
	d.data, _ = cutLines(d.data, first.lineStart, end, isTOMLComment, true)
	if err := d.parse(); err != nil {
		return fmt.Errorf("the removal of server %q left %w", e.name, err)
	}
	return nil
}

func isTOMLComment(line []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("#"))
}

// header is the table header of keys.
func header(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = tomlKey(k)
	}
	return "[" + strings.Join(q, ".") + "]"
}

func (d *tomlDoc) insert(keys []string, list bool, name string, add []member) (*entry, error) {
	if list || slices.Contains(keys, "*") {
		return nil, errors.New("TOML files keep their servers as tables")
	}
	ts, err := d.find(keys)
	if err != nil {
		return nil, err
	}
	nl := d.newline()
	var parts []string
	for _, a := range add {
		v, err := tomlLiteral(a.value)
		if err != nil {
			return nil, err
		}
		parts = append(parts, tomlKey(a.key)+" = "+v)
	}
	var last *tomlExpr
	if len(ts) > 0 {
		last = &d.exprs[ts[len(ts)-1].exprs[0]]
	}
	switch {
	case last != nil && last.kind == unstable.KeyValue && len(last.key) == 1:
		// After its siblings written one a line: { k = v, … }.
		v := "{}"
		if len(parts) > 0 {
			v = "{ " + strings.Join(parts, ", ") + " }"
		}
		d.placeKV(keys, string(d.data[last.lineStart:last.start])+tomlKey(name)+" = "+v)
	default:
		indent := ""
		if len(ts) > 0 && ts[len(ts)-1].isTable(d) && len(ts[len(ts)-1].exprs) > 1 {
			if x := d.exprs[ts[len(ts)-1].exprs[1]]; x.kind == unstable.KeyValue {
				indent = string(d.data[x.lineStart:x.start])
			}
		}
		var b strings.Builder
		b.WriteString(header(append(slices.Clone(keys), name)))
		for _, p := range parts {
			b.WriteString(nl + indent + p)
		}
		d.placeTable(keys, b.String())
	}
	if err := d.parse(); err != nil {
		return nil, fmt.Errorf("adding server %q left %w", name, err)
	}
	e := &entry{keys: slices.Clone(keys), name: name}
	t, err := d.locate(e)
	if err != nil {
		return nil, err
	}
	return e, d.fill(e, t)
}

// placeTable puts text, a table of the map at keys, after the last table
// of that map, else at the end of the file, a blank line above it.
func (d *tomlDoc) placeTable(keys []string, text string) {
	nl := d.newline()
	ts, _ := d.find(keys)
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].isTable(d) {
			_, spanEnd := ts[i].span(d)
			_, pos := lineTail(d.data, spanEnd)
			if pos == len(d.data) && !bytes.HasSuffix(d.data, []byte("\n")) {
				d.splice(pos, pos, nl+nl+text)
				return
			}
			d.splice(pos, pos, nl+text+nl)
			return
		}
	}
	d.appendText(text)
}

// appendText puts text at the end of the file, a blank line above it.
func (d *tomlDoc) appendText(text string) {
	nl := d.newline()
	pre := ""
	if len(bytes.TrimSpace(d.data)) > 0 {
		if !bytes.HasSuffix(d.data, []byte("\n")) {
			pre = nl
		}
		if !bytes.HasSuffix(d.data, []byte("\n\n")) && !bytes.HasSuffix(d.data, []byte("\n\r\n")) {
			pre += nl
		}
	}
	d.splice(len(d.data), len(d.data), pre+text+nl)
}

// placeKV puts text, a key/value line of an entry of the map at keys:
// its key the name alone after the last key/value of the [keys] table
// (the table made at the end of the file if missing), its key the whole
// path after the key/values at the top.
func (d *tomlDoc) placeKV(keys []string, text string) {
	nl := d.newline()
	var p unstable.Parser
	p.Reset([]byte(strings.TrimSpace(text)))
	rooted := false
	if p.NextExpression() {
		k, _, _ := keyParts(p.Expression().Key())
		rooted = len(k) > 1
	}
	pos := 0
	if !rooted {
		i := slices.IndexFunc(d.exprs, func(x tomlExpr) bool { return x.kind == unstable.Table && slices.Equal(x.path, keys) })
		if i < 0 {
			d.appendText(header(keys) + nl + text)
			return
		}
		pos = d.exprs[i].lineEnd
		for _, x := range d.exprs[i+1:] {
			if x.kind != unstable.KeyValue {
				break
			}
			pos = x.lineEnd
		}
		// Comment lines right below stay above it.
		for pos < len(d.data) {
			_, next := lineTail(d.data, pos)
			if !isTOMLComment(d.data[pos:next]) {
				break
			}
			pos = next
		}
	} else {
		for _, x := range d.exprs {
			if x.kind != unstable.KeyValue {
				break
			}
			pos = x.lineEnd
		}
	}
	if pos == len(d.data) && len(d.data) > 0 && !bytes.HasSuffix(d.data, []byte("\n")) {
		d.splice(pos, pos, nl+text)
		return
	}
	d.splice(pos, pos, text+nl)
}

// restoreMoved puts back text, an entry of the other kind (a table for
// one now written inline, or the other way round), where that kind goes.
func (d *tomlDoc) restoreMoved(e *entry, text string) error {
	if err := d.remove(e); err != nil {
		return err
	}
	if strings.HasPrefix(strings.TrimSpace(text), "[") {
		d.placeTable(e.keys, text)
	} else {
		d.placeKV(e.keys, text)
	}
	return d.refresh(e)
}
