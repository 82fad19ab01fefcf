package hosts

import (
	"fmt"
)

// A Change is one entry connect rewrote: what it was and what it wrote.
// Written is "" for an entry connect removed (connect --aggregate), and
// Original "" for one it added.
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
	return o.Apply(Plan{Point: targets})
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
