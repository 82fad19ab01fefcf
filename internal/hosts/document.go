package hosts

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// A document is one host config file held by a format-preserving editor:
// whatever it does not rewrite stays byte for byte.
type document interface {
	// entries returns the server entries of the map at m, in file order.
	entries(m serverMap) ([]*entry, error)
	// rewrite removes e's members whose keys drop reports and puts add
	// first in their place, keeping every other member as it is.
	rewrite(e *entry, drop func(key string) bool, add []member) error
	// restore sets e's value to text, an entry's text as entries returned it.
	restore(e *entry, text string) error
	// remove deletes e from its map, with the comments and blank lines
	// that belong to it alone.
	remove(e *entry) error
	// insert adds an entry name holding add at the end of the map at keys
	// (a list of items named by "name" when list is set), in the style of
	// the entries there; it makes the map when the file has none.
	insert(keys []string, list bool, name string, add []member) (*entry, error)
	// bytes is the document as it now stands.
	bytes() []byte
}

// A serverMap says where a host file keeps its servers.
type serverMap struct {
	// path is the keys from the top of the file; "*" stands for every key
	// at its level (Claude Code's projects).
	path []string
	// list is set when the servers are list items named by their "name"
	// member (Continue) rather than the members of an object.
	list bool
	// workspaceAt is the index of the key that names the project the
	// servers run in (Claude Code's projects["/dir"]), 0 for none.
	workspaceAt int
	// skip, if set, tells a member of the map that is not a server
	// (opencode's "servers" object of its newer layout, beside the
	// servers of the older one).
	skip func(name string, fields map[string]any) bool
}

// mapEntries returns the server entries of doc at sm, in file order.
func mapEntries(doc document, sm serverMap) ([]*entry, error) {
	es, err := doc.entries(sm)
	if err != nil || sm.skip == nil {
		return es, err
	}
	out := es[:0]
	for _, e := range es {
		if !sm.skip(e.name, e.fields) {
			out = append(out, e)
		}
	}
	return out, nil
}

// where names a map found at keys in messages: mcpServers,
// projects["/home/u/app"].mcpServers.
func where(keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		switch {
		case isPlainKey(k) && i == 0:
			b.WriteString(k)
		case isPlainKey(k):
			b.WriteString("." + k)
		default:
			fmt.Fprintf(&b, "[%q]", k)
		}
	}
	return b.String()
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// An entry is one server entry of a document.
type entry struct {
	// keys is the path of the map holding it (wildcards resolved).
	keys []string
	name string
	// fields is the entry's value decoded: strings, float64 or int64,
	// bool, []any, map[string]any.
	fields map[string]any
	// text is the entry's value as it stands in the file.
	text string
	// node is the editor's handle on the entry.
	node any
}

// A member is a key and its value to write into an entry: a string, a
// bool, a []string or a map[string]string.
type member struct {
	key   string
	value any
}

// sameText reports whether two entry texts hold the same value, however
// laid out: a host that rewrites its file with its own formatting still
// keeps what connect wrote.
func sameText(format Format, a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := decodeValue(format, a)
	y, err2 := decodeValue(format, b)
	if err1 != nil || err2 != nil {
		return false
	}
	p, err1 := json.Marshal(x)
	q, err2 := json.Marshal(y)
	if err1 != nil || err2 != nil { // a TOML nan or inf
		return reflect.DeepEqual(x, y)
	}
	return string(p) == string(q)
}

// Format is a host config file's format.
type Format string

const (
	JSON Format = "json" // JSON, or JSON with comments and trailing commas
	TOML Format = "toml"
	YAML Format = "yaml"
)

// parse opens data with the editor of its format.
func parse(format Format, data []byte) (document, error) {
	switch format {
	case JSON:
		return parseJSON(data)
	case TOML:
		return parseTOML(data)
	case YAML:
		return parseYAML(data)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// decodeValue decodes an entry's text of a document of format.
func decodeValue(format Format, text string) (any, error) {
	switch format {
	case JSON:
		return decodeJSONValue(text)
	case TOML:
		return decodeTOMLValue(text)
	case YAML:
		return decodeYAMLValue(text)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}
