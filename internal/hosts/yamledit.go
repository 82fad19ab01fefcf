package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML editor's removal and insertion of whole entries.

// lineEndAt is the offset past the end of the line holding offset i.
func lineEndAt(data []byte, i int) int {
	if i > 0 && data[i-1] == '\n' {
		return i
	}
	if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(data)
}

// dashAt is the offset of the "-" of the list item whose first key stands
// at offset off, -1 when it is not on that line.
func dashAt(data []byte, off int) int {
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	for i := off - 1; i >= lineStart; i-- {
		switch data[i] {
		case '-':
			return i
		case ' ', '\t':
		default:
			return -1
		}
	}
	return -1
}

func (d *yamlDoc) remove(e *entry) error {
	s, err := d.locate(e)
	if err != nil {
		return err
	}
	if s.inFlow {
		return d.removeFromFlow(e, s)
	}
	x := newYAMLIndex(d.data, nil)
	var from int // where the entry's key, or the item's dash, stands
	if s.list {
		at := x.offset(s.val.Line, s.val.Column)
		if from = dashAt(d.data, at); from < 0 {
			return fmt.Errorf("server %q of %s: its first key is not on its dash's line", e.name, where(e.keys))
		}
	} else {
		from = x.offset(s.key.Line, s.key.Column)
	}
	start := bytes.LastIndexByte(d.data[:from], '\n') + 1
	col := from - start
	end := s.end
	if s.flow {
		end = lineEndAt(d.data, s.end)
	}
	// The comment lines right above it, at its indent, are about it.
	above := func(line []byte) bool {
		t := bytes.TrimLeft(line, " ")
		return bytes.HasPrefix(t, []byte("#")) && len(line)-len(t) == col
	}
	old := d.data
	var at int
	d.data, at = cutLines(d.data, start, end, above, false)
	// Blank lines left right below the map's key go too.
	blanks := at
	for blanks > 0 {
		prev := bytes.LastIndexByte(d.data[:blanks-1], '\n') + 1
		line := d.data[prev:blanks]
		if len(bytes.TrimSpace(line)) != 0 {
			t := bytes.TrimLeft(line, " ")
			if blanks < at && len(line)-len(t) < col && !bytes.HasPrefix(t, []byte("#")) {
				d.data = slices.Concat(d.data[:blanks:blanks], d.data[at:])
			}
			break
		}
		blanks = prev
	}
	if _, err := d.top(); err != nil {
		d.data = old
		return fmt.Errorf("server %q of %s: its removal does not read back: %w", e.name, where(e.keys), err)
	}
	return nil
}

// removeFromFlow removes an entry of a collection written in flow style
// ({a: …, b: …} or [{…}, {…}]) with the comma that parts it from the next
// one, or from the one before when it is the last.
func (d *yamlDoc) removeFromFlow(e *entry, s yamlSpan) error {
	x := newYAMLIndex(d.data, nil)
	open := x.offset(s.parent.Line, s.parent.Column)
	_, commas, err := scanFlow(d.data, open)
	if err != nil {
		return err
	}
	from := s.start
	if s.key != nil {
		from = x.offset(s.key.Line, s.key.Column)
	}
	start, end := from, s.end
	if i := slices.IndexFunc(commas, func(c int) bool { return c >= s.end }); i >= 0 {
		end = commas[i] + 1
		for end < len(d.data) && (d.data[end] == ' ' || d.data[end] == '\t') {
			end++
		}
	} else {
		for _, c := range commas {
			if c < from {
				start = c
			}
		}
	}
	old := d.data
	d.data = slices.Concat(d.data[:start:start], d.data[end:])
	if _, err := d.top(); err != nil {
		d.data = old
		return fmt.Errorf("server %q of %s: its removal does not read back: %w", e.name, where(e.keys), err)
	}
	return nil
}

// yamlMembers are add written as key: value.
func yamlMembers(add []member) ([]string, error) {
	var out []string
	for _, a := range add {
		v, err := yamlFlowValue(a.value)
		if err != nil {
			return nil, err
		}
		out = append(out, yamlScalar(a.key)+": "+v)
	}
	return out, nil
}

// blockEntry is an entry written as lines: a mapping's key and its
// members below it at indent, or a list item's dash at col and its
// members at indent, the first on the dash's line. Without members it is
// {} on the key's (or dash's) line.
func (d *yamlDoc) blockEntry(list bool, col, indent int, name string, members []string, flow bool) string {
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", col))
	if list {
		b.WriteString("- ")
	} else {
		b.WriteString(yamlScalar(name) + ":")
	}
	switch {
	case flow || len(members) == 0:
		if !list {
			b.WriteString(" ")
		}
		b.WriteString("{" + strings.Join(members, ", ") + "}" + d.eol)
	case list:
		b.WriteString(members[0] + d.eol)
		for _, m := range members[1:] {
			b.WriteString(strings.Repeat(" ", indent) + m + d.eol)
		}
	default:
		b.WriteString(d.eol)
		for _, m := range members {
			b.WriteString(strings.Repeat(" ", indent) + m + d.eol)
		}
	}
	return b.String()
}

func (d *yamlDoc) insert(keys []string, list bool, name string, add []member) (*entry, error) {
	if slices.Contains(keys, "*") {
		return nil, fmt.Errorf("no one map %s to add %q to", where(keys), name)
	}
	if list && !slices.ContainsFunc(add, func(m member) bool { return m.key == "name" }) {
		add = append([]member{{"name", name}}, add...)
	}
	members, err := yamlMembers(add)
	if err != nil {
		return nil, err
	}
	sm := serverMap{path: keys, list: list}
	spans, err := d.spans(sm)
	if err != nil {
		return nil, err
	}
	old := d.data
	if len(spans) > 0 {
		err = d.insertAfter(spans[len(spans)-1], list, name, members)
	} else {
		err = d.insertFirst(keys, list, name, members)
	}
	if err != nil {
		return nil, err
	}
	spans, err = d.spans(sm)
	if err == nil && (len(spans) == 0 || spans[len(spans)-1].name != name) {
		err = errors.New("it is not where it was put")
	}
	if err != nil {
		d.data = old
		return nil, fmt.Errorf("adding server %q to %s: %w", name, where(keys), err)
	}
	e := &entry{node: yamlLoc{sm: sm, index: len(spans) - 1}}
	return e, d.fill(e, spans[len(spans)-1])
}

// insertAfter puts a new entry after last, in its style.
func (d *yamlDoc) insertAfter(last yamlSpan, list bool, name string, members []string) error {
	x := newYAMLIndex(d.data, nil)
	text := "{" + strings.Join(members, ", ") + "}"
	if last.inFlow {
		if !list {
			text = yamlScalar(name) + ": " + text
		}
		d.data = slices.Concat(d.data[:last.end:last.end], []byte(", "+text), d.data[last.end:])
		return nil
	}
	var from int
	if list {
		if from = dashAt(d.data, x.offset(last.val.Line, last.val.Column)); from < 0 {
			return errors.New("the item before has its first key below its dash")
		}
	} else {
		from = x.offset(last.key.Line, last.key.Column)
	}
	col := from - (bytes.LastIndexByte(d.data[:from], '\n') + 1)
	indent := last.indent
	if last.flow {
		indent = col + 2
	}
	pos := last.end
	if last.flow {
		pos = lineEndAt(d.data, last.end)
	}
	entry := d.blockEntry(list, col, indent, name, members, last.flow)
	if pos == len(d.data) && len(d.data) > 0 && !bytes.HasSuffix(d.data, []byte("\n")) {
		entry = d.eol + strings.TrimSuffix(entry, d.eol)
	}
	d.data = slices.Concat(d.data[:pos:pos], []byte(entry), d.data[pos:])
	return nil
}

// insertFirst puts the first entry of the map at keys: below its key when
// it is there and empty (its {}, [] or null taken off), else with the
// keys it lacks at the end of the file.
func (d *yamlDoc) insertFirst(keys []string, list bool, name string, members []string) error {
	top, err := d.top()
	if err != nil {
		return err
	}
	x := newYAMLIndex(d.data, nil)
	cur := top
	for i, k := range keys {
		var key, val *yaml.Node
		if cur != nil && cur.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(cur.Content); j += 2 {
				if cur.Content[j].Value == k {
					key, val = cur.Content[j], cur.Content[j+1]
				}
			}
		}
		if key == nil {
			if cur != top && cur != nil {
				return fmt.Errorf("%s has no %q", where(keys[:i]), k)
			}
			if cur != nil && cur.Style&yaml.FlowStyle != 0 {
				return errors.New("the file is one mapping in flow style")
			}
			var b strings.Builder
			for j, k := range keys[i:] {
				b.WriteString(strings.Repeat(" ", 2*(i+j)) + yamlScalar(k) + ":" + d.eol)
			}
			col := 2 * len(keys)
			b.WriteString(d.blockEntry(list, col, col+2, name, members, false))
			pre := ""
			if len(d.data) > 0 && !bytes.HasSuffix(d.data, []byte("\n")) {
				pre = d.eol
			}
			d.data = slices.Concat(d.data, []byte(pre+b.String()))
			return nil
		}
		if i < len(keys)-1 {
			cur = val
			continue
		}
		empty := isNull(val) || (val.Kind == yaml.MappingNode || val.Kind == yaml.SequenceNode) && len(val.Content) == 0
		if !empty {
			return fmt.Errorf("%s is neither empty nor a map of servers", where(keys))
		}
		col := key.Column - 1 + 2
		entry := d.blockEntry(list, col, col+2, name, members, false)
		pos := lineEndAt(d.data, x.offset(key.Line, key.Column))
		if pos == len(d.data) && !bytes.HasSuffix(d.data, []byte("\n")) {
			entry = d.eol + strings.TrimSuffix(entry, d.eol)
		}
		d.data = slices.Concat(d.data[:pos:pos], []byte(entry), d.data[pos:])
		if val.Line == key.Line && (val.Kind != yaml.ScalarNode || val.Value != "") {
			// The {}, [] or null on the key's line goes.
			from := x.offset(val.Line, val.Column)
			to := from + len(val.Value)
			if val.Kind != yaml.ScalarNode {
				if to, _, err = scanFlow(d.data, from); err != nil {
					return err
				}
			}
			for from > 0 && d.data[from-1] == ' ' {
				from--
			}
			d.data = slices.Concat(d.data[:from:from], d.data[to:])
		}
		return nil
	}
	return nil
}
