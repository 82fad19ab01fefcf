package hosts

import (
	"fmt"
	"slices"
)

// A Change is one entry connect rewrote: what it was and what it wrote.
type Change struct {
	Keys     []string `json:"keys"`
	Name     string   `json:"name"`
	Original string   `json:"original"`
	Written  string   `json:"written"`
	// Server is the mcpd server the entry was pointed at.
	Server string `json:"server"`
}

// Point rewrites the entries of o named in targets to reach mcpd, keeping
// the host's own options of each (its enabled state, allow-lists,
// timeouts) and every other byte of the file. It returns the file's new
// content and what changed; o is left as it was read.
func (o *Opened) Point(targets map[*Entry]Target) ([]byte, []Change, error) {
	doc, err := parse(o.File.Format, o.Data)
	if err != nil {
		return nil, nil, err
	}
	fresh, err := o.entriesOf(doc)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	for i, en := range o.Entries {
		t, ok := targets[en]
		if !ok {
			continue
		}
		e := fresh[i]
		orig := e.text
		if err := doc.rewrite(e, o.Host.shape.drops, o.Host.shape.encode(t)); err != nil {
			return nil, nil, fmt.Errorf("server %q of %s: %w", en.Name, en.Where, err)
		}
		changes = append(changes, Change{Keys: slices.Clone(e.keys), Name: e.name, Original: orig, Written: e.text, Server: t.Server})
	}
	return doc.bytes(), changes, nil
}

// entriesOf lists doc's entries in the order o.Entries has them.
func (o *Opened) entriesOf(doc document) ([]*entry, error) {
	var out []*entry
	for _, sm := range o.File.maps {
		es, err := mapEntries(doc, sm)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	if len(out) != len(o.Entries) {
		return nil, fmt.Errorf("%s: the file read differently twice", o.File.Path)
	}
	return out, nil
}
