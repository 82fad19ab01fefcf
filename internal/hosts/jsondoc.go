package hosts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tailscale/hujson"
)

// jsonDoc edits JSON with comments and trailing commas (JSONC, as VS Code
// and Zed write it) through hujson's syntax tree, which keeps every byte
// of whitespace and every comment it is not told to change.
type jsonDoc struct {
	root hujson.Value
}

// bom is the UTF-8 byte order mark some editors write.
var bom = []byte("\xef\xbb\xbf")

func parseJSON(data []byte) (*jsonDoc, error) {
	if bytes.HasPrefix(data, bom) {
		return nil, errors.New("the file starts with a byte order mark; remove it and try again")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, errors.New("not a JSON object at the top")
	}
	return &jsonDoc{root: v}, nil
}

func decodeJSONValue(text string) (any, error) {
	v, err := hujson.Parse([]byte(text))
	if err != nil {
		return nil, err
	}
	v.Standardize()
	var out any
	d := json.NewDecoder(bytes.NewReader(v.Pack()))
	d.UseNumber()
	return out, d.Decode(&out)
}

func (d *jsonDoc) bytes() []byte { return d.root.Pack() }

// find returns the members of the objects at path, with their keys.
func (d *jsonDoc) find(path []string) []found {
	cur := []found{{val: &d.root}}
	for _, k := range path {
		var next []found
		for _, f := range cur {
			obj, ok := f.val.Value.(*hujson.Object)
			if !ok {
				continue
			}
			for i := range obj.Members {
				m := &obj.Members[i]
				name := m.Name.Value.(hujson.Literal).String()
				if k == "*" || k == name {
					next = append(next, found{keys: append(append([]string(nil), f.keys...), name), val: &m.Value})
				}
			}
		}
		cur = next
	}
	return cur
}

type found struct {
	keys []string
	val  *hujson.Value
}

func (d *jsonDoc) entries(m serverMap) ([]*entry, error) {
	var out []*entry
	for _, f := range d.find(m.path) {
		switch v := f.val.Value.(type) {
		case *hujson.Object:
			if m.list {
				return nil, fmt.Errorf("%s must be a list", where(f.keys))
			}
			for i := range v.Members {
				mem := &v.Members[i]
				e, err := jsonEntry(f.keys, mem.Name.Value.(hujson.Literal).String(), &mem.Value)
				if err != nil {
					return nil, err
				}
				out = append(out, e)
			}
		case *hujson.Array:
			if !m.list {
				return nil, fmt.Errorf("%s must be an object of servers, not a list", where(f.keys))
			}
			for i := range v.Elements {
				el := &v.Elements[i]
				obj, ok := el.Value.(*hujson.Object)
				if !ok {
					return nil, fmt.Errorf("%s[%d] must be an object", where(f.keys), i)
				}
				name, _ := memberString(obj, "name")
				e, err := jsonEntry(f.keys, name, el)
				if err != nil {
					return nil, err
				}
				out = append(out, e)
			}
		default:
			if lit, ok := f.val.Value.(hujson.Literal); ok && lit.Kind() == 'n' {
				continue // "mcpServers": null
			}
			return nil, fmt.Errorf("%s must be an object of servers", where(f.keys))
		}
	}
	return out, nil
}

func jsonEntry(keys []string, name string, v *hujson.Value) (*entry, error) {
	text := packTrimmed(v)
	fields, err := decodeJSONValue(text)
	if err != nil {
		return nil, err
	}
	obj, ok := fields.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("server %q of %s must be an object", name, where(keys))
	}
	return &entry{keys: keys, name: name, fields: obj, text: text, node: v}, nil
}

// packTrimmed is v's value without the space and comments around it.
func packTrimmed(v *hujson.Value) string {
	t := hujson.Value{Value: v.Value}
	return string(t.Pack())
}

func memberString(obj *hujson.Object, key string) (string, bool) {
	for _, m := range obj.Members {
		if m.Name.Value.(hujson.Literal).String() == key {
			if lit, ok := m.Value.Value.(hujson.Literal); ok && lit.Kind() == '"' {
				return lit.String(), true
			}
		}
	}
	return "", false
}

func (d *jsonDoc) rewrite(e *entry, drop func(string) bool, add []member) error {
	v := e.node.(*hujson.Value)
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return fmt.Errorf("server %q is not an object", e.name)
	}
	// A key it writes goes wherever it was.
	drop = dropping(drop, add)
	trailing := len(obj.Members) > 0 && obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	first, sep := memberSpacing(obj)
	kept := make([]hujson.ObjectMember, 0, len(obj.Members)+len(add))
	for _, a := range add {
		val, err := jsonLiteral(a.value)
		if err != nil {
			return err
		}
		before := sep
		if len(kept) == 0 {
			before = first
		}
		kept = append(kept, hujson.ObjectMember{
			Name:  hujson.Value{BeforeExtra: hujson.Extra(before), Value: hujson.String(a.key)},
			Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: val.Value},
		})
	}
	for i, m := range obj.Members {
		if drop(m.Name.Value.(hujson.Literal).String()) {
			continue
		}
		if i == 0 && len(add) > 0 {
			m.Name.BeforeExtra = hujson.Extra(sep)
		}
		kept = append(kept, m)
	}
	for i := range kept {
		kept[i].Value.AfterExtra = nil
	}
	if trailing && len(kept) > 0 {
		kept[len(kept)-1].Value.AfterExtra = hujson.Extra{}
	}
	obj.Members = kept
	return d.refresh(e)
}

// memberSpacing returns what stands before an object's first member and
// before each later one: a new line and the members' indent, or a space
// for an object written on one line.
func memberSpacing(obj *hujson.Object) (first, sep string) {
	if len(obj.Members) == 0 {
		return " ", " "
	}
	first = string(obj.Members[0].Name.BeforeExtra)
	ws := first
	if len(obj.Members) > 1 {
		ws = string(obj.Members[1].Name.BeforeExtra)
	}
	i := strings.LastIndex(ws, "\n")
	if i < 0 {
		return first, " "
	}
	indent := ws[i+1:]
	if strings.TrimLeft(indent, " \t") != "" { // a comment's tail: fall back
		indent = "  "
	}
	if !strings.Contains(first, "\n") {
		first = "\n" + indent
	}
	return first, "\n" + indent
}

// jsonLiteral is v as a one-line JSON value.
func jsonLiteral(v any) (hujson.Value, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return hujson.Value{}, err
	}
	out := bytes.TrimSpace(b.Bytes())
	// One space after each comma and colon of a list or object, as people
	// write them on one line.
	val, err := hujson.Parse(out)
	if err != nil {
		return hujson.Value{}, err
	}
	spaceOut(&val)
	return val, nil
}

func spaceOut(v *hujson.Value) {
	switch t := v.Value.(type) {
	case *hujson.Array:
		for i := range t.Elements {
			if i > 0 {
				t.Elements[i].BeforeExtra = hujson.Extra(" ")
			}
			spaceOut(&t.Elements[i])
		}
	case *hujson.Object:
		for i := range t.Members {
			if i > 0 {
				t.Members[i].Name.BeforeExtra = hujson.Extra(" ")
			}
			t.Members[i].Value.BeforeExtra = hujson.Extra(" ")
			spaceOut(&t.Members[i].Value)
		}
	}
}

func (d *jsonDoc) restore(e *entry, text string) error {
	v := e.node.(*hujson.Value)
	orig, err := hujson.Parse([]byte(text))
	if err != nil {
		return fmt.Errorf("the saved entry of server %q: %w", e.name, err)
	}
	v.Value = orig.Value
	return d.refresh(e)
}

// refresh re-reads e after an edit.
func (d *jsonDoc) refresh(e *entry) error {
	d.root.UpdateOffsets()
	v := e.node.(*hujson.Value)
	ne, err := jsonEntry(e.keys, e.name, v)
	if err != nil {
		return err
	}
	e.fields, e.text = ne.fields, ne.text
	return nil
}
