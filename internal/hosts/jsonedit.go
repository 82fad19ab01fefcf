package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// The JSON editor's removal and insertion of whole entries.

// container is the object or array at keys exactly, nil when there is
// none (or null).
func (d *jsonDoc) container(keys []string) *hujson.Value {
	for _, f := range d.find(keys) {
		if slices.Equal(f.keys, keys) {
			return f.val
		}
	}
	return nil
}

func (d *jsonDoc) remove(e *entry) error {
	v := e.node.(*hujson.Value)
	c := d.container(e.keys)
	if c == nil {
		return fmt.Errorf("server %q of %s is gone", e.name, where(e.keys))
	}
	switch t := c.Value.(type) {
	case *hujson.Object:
		for i := range t.Members {
			if &t.Members[i].Value == v {
				removeItem(len(t.Members), i, func(j int) *hujson.Extra { return &t.Members[j].Name.BeforeExtra },
					func(j int) *hujson.Extra { return &t.Members[j].Value.AfterExtra }, &t.AfterExtra)
				t.Members = slices.Delete(t.Members, i, i+1)
				d.root.UpdateOffsets()
				return nil
			}
		}
	case *hujson.Array:
		for i := range t.Elements {
			if &t.Elements[i] == v {
				removeItem(len(t.Elements), i, func(j int) *hujson.Extra { return &t.Elements[j].BeforeExtra },
					func(j int) *hujson.Extra { return &t.Elements[j].AfterExtra }, &t.AfterExtra)
				t.Elements = slices.Delete(t.Elements, i, i+1)
				d.root.UpdateOffsets()
				return nil
			}
		}
	}
	return fmt.Errorf("server %q of %s is gone", e.name, where(e.keys))
}

// removeItem fixes the space and comments around item i of n of an
// object or array before it is cut: before(j) is what stands before item
// j, after(j) what stands after it (non-nil on the last for a trailing
// comma), closing what stands before the closing bracket. The item takes
// with it the lines above it up to the line before (comments about it)
// and a comment ending its own line; a comment ending the line before
// stays, and so does a trailing comma.
func removeItem(n, i int, before, after func(int) *hujson.Extra, closing *hujson.Extra) {
	var keep hujson.Extra // the end of the line before the item
	own := *before(i)
	if k := bytes.IndexByte(own, '\n'); k >= 0 {
		keep = own[:k]
	}
	next := closing
	if i+1 < n {
		next = before(i + 1)
	}
	if k := bytes.IndexByte(*next, '\n'); k >= 0 {
		*next = (*next)[k:]
	}
	*next = slices.Concat(keep, *next)
	if i == n-1 && i > 0 {
		prev := after(i - 1)
		if *after(i) != nil { // a trailing comma stays
			if *prev == nil {
				*prev = hujson.Extra{}
			}
		} else {
			*closing = slices.Concat(*prev, *closing)
			*prev = nil
		}
	}
	if n == 1 && len(bytes.TrimSpace(*closing)) == 0 {
		*closing = nil // {}
	}
}

// indentUnit is the file's step of indentation, "" for a file written on
// one line.
func (d *jsonDoc) indentUnit() string {
	obj := d.root.Value.(*hujson.Object)
	_, sep := memberSpacing(obj)
	if !strings.Contains(sep, "\n") {
		if len(obj.Members) == 0 {
			return "  "
		}
		return ""
	}
	if strings.Contains(sep, "\t") {
		return "\t"
	}
	unit := sep[strings.LastIndex(sep, "\n")+1:]
	if unit == "" {
		return "  "
	}
	return unit
}

// spacing is what stands before each member of a new object at depth
// (the top's members at 1) and before its closing brace.
func spacing(unit string, depth int) (sep, closing string) {
	if unit == "" {
		return " ", ""
	}
	return "\n" + strings.Repeat(unit, depth), "\n" + strings.Repeat(unit, depth-1)
}

func (d *jsonDoc) insert(keys []string, list bool, name string, add []member) (*entry, error) {
	if slices.Contains(keys, "*") {
		return nil, fmt.Errorf("no one map %s to add %q to", where(keys), name)
	}
	unit := d.indentUnit()
	// Make the maps the file lacks, each at the end of the one above.
	for i := range keys {
		var empty hujson.ValueTrimmed = &hujson.Object{}
		if list && i == len(keys)-1 {
			empty = &hujson.Array{}
		}
		if c := d.container(keys[:i+1]); c != nil {
			if lit, ok := c.Value.(hujson.Literal); ok && lit.Kind() == 'n' {
				c.Value = empty // null
			}
			continue
		}
		parent := &d.root
		if i > 0 {
			parent = d.container(keys[:i])
		}
		obj, ok := parent.Value.(*hujson.Object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", where(keys[:i]))
		}
		appendMember(obj, unit, i+1, hujson.String(keys[i]), empty)
	}
	c := d.container(keys)
	depth := len(keys) + 1
	val := &hujson.Object{}
	var sibling *hujson.Object
	switch t := c.Value.(type) {
	case *hujson.Object:
		if list {
			return nil, fmt.Errorf("%s must be a list", where(keys))
		}
		if len(t.Members) > 0 {
			sibling, _ = t.Members[len(t.Members)-1].Value.Value.(*hujson.Object)
		}
		fillObject(val, sibling, unit, depth+1, add)
		appendMember(t, unit, depth, hujson.String(name), val)
		d.root.UpdateOffsets()
		return jsonEntry(keys, name, &t.Members[len(t.Members)-1].Value)
	case *hujson.Array:
		if !list {
			return nil, fmt.Errorf("%s must be an object of servers, not a list", where(keys))
		}
		if len(t.Elements) > 0 {
			sibling, _ = t.Elements[len(t.Elements)-1].Value.(*hujson.Object)
		}
		if !slices.ContainsFunc(add, func(m member) bool { return m.key == "name" }) {
			add = append([]member{{"name", name}}, add...)
		}
		fillObject(val, sibling, unit, depth+1, add)
		appendElement(t, unit, depth, val)
		d.root.UpdateOffsets()
		return jsonEntry(keys, name, &t.Elements[len(t.Elements)-1])
	}
	return nil, errors.New(where(keys) + " must be an object of servers")
}

// fillObject writes add into obj laid out as sibling, the entry before it
// (nil for none): on one line or one member a line.
func fillObject(obj, sibling *hujson.Object, unit string, depth int, add []member) {
	sep, closing := spacing(unit, depth)
	first := sep
	if unit == "" {
		first = ""
	}
	if sibling != nil && len(sibling.Members) > 0 {
		var f string
		f, sep = memberSpacing(sibling)
		first = sep
		if !strings.Contains(f, "\n") && strings.TrimSpace(f) == "" {
			first = f // {"command": …} or { "command": … }
		}
		closing = string(sibling.AfterExtra)
		if strings.TrimSpace(closing) != "" {
			_, closing = spacing(unit, depth)
			if !strings.Contains(sep, "\n") {
				closing = ""
			}
		}
	}
	for i, a := range add {
		v, err := jsonLiteral(a.value)
		if err != nil {
			continue // a member is a string, bool, []string or map[string]string
		}
		before := sep
		if i == 0 {
			before = first
		}
		obj.Members = append(obj.Members, hujson.ObjectMember{
			Name:  hujson.Value{BeforeExtra: hujson.Extra(before), Value: hujson.String(a.key)},
			Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: v.Value},
		})
	}
	if len(obj.Members) > 0 {
		obj.AfterExtra = hujson.Extra(closing)
	}
}

// appendMember adds name: v at the end of obj, whose members stand at
// depth when it has none yet, keeping a trailing comma and moving a
// comment that ended the last member's line to stay on that line.
func appendMember(obj *hujson.Object, unit string, depth int, name hujson.Literal, v hujson.ValueTrimmed) {
	var sep string
	if len(obj.Members) == 0 {
		sep, _ = spacing(unit, depth)
		if unit == "" {
			sep = ""
		}
		if _, closing := spacing(unit, depth); len(bytes.TrimSpace(obj.AfterExtra)) == 0 {
			obj.AfterExtra = hujson.Extra(closing)
		}
	} else {
		_, sep = memberSpacing(obj)
	}
	m := hujson.ObjectMember{Name: hujson.Value{Value: name}, Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: v}}
	n := len(obj.Members)
	var last *hujson.Extra
	if n > 0 {
		last = &obj.Members[n-1].Value.AfterExtra
	}
	m.Name.BeforeExtra, m.Value.AfterExtra = appendSpacing(&obj.AfterExtra, last, sep)
	obj.Members = append(obj.Members, m)
}

// appendElement adds v at the end of the list arr.
func appendElement(arr *hujson.Array, unit string, depth int, v hujson.ValueTrimmed) {
	sep, closing := spacing(unit, depth)
	n := len(arr.Elements)
	if n == 0 {
		if len(bytes.TrimSpace(arr.AfterExtra)) == 0 {
			arr.AfterExtra = hujson.Extra(closing)
		}
	} else if b := string(arr.Elements[n-1].BeforeExtra); strings.Contains(b, "\n") {
		sep = b[strings.LastIndex(b, "\n"):]
	} else if unit == "" || !strings.Contains(string(arr.AfterExtra), "\n") {
		sep = " "
	}
	el := hujson.Value{Value: v}
	var last *hujson.Extra
	if n > 0 {
		last = &arr.Elements[n-1].AfterExtra
	}
	el.BeforeExtra, el.AfterExtra = appendSpacing(&arr.AfterExtra, last, sep)
	arr.Elements = append(arr.Elements, el)
}

// appendSpacing returns what stands before and after a new last item of a
// collection whose closing extra is closing and whose last item's after
// extra is last (nil for an empty one): a comment ending the last item's
// line stays there; a trailing comma stays last.
func appendSpacing(closing *hujson.Extra, last *hujson.Extra, sep string) (before, after hujson.Extra) {
	before = hujson.Extra(sep)
	if last == nil {
		if len(bytes.TrimSpace(*closing)) != 0 {
			// Comments alone in an empty collection stay above the item.
			if k := bytes.LastIndexByte(*closing, '\n'); k >= 0 {
				before = slices.Concat((*closing)[:k], hujson.Extra(sep))
				*closing = (*closing)[k:]
			}
		}
		return before, nil
	}
	if k := bytes.IndexByte(*closing, '\n'); k > 0 && len(bytes.TrimSpace((*closing)[:k])) > 0 {
		before = slices.Concat((*closing)[:k], hujson.Extra(sep))
		*closing = (*closing)[k:]
	}
	if *last != nil {
		after = hujson.Extra{}
	}
	return before, after
}
