// The naming of a list's items: each server's items under the names a host
// sees (prefixed in an aggregate), and clashes between them.

package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// serverItems are the items one server listed, a JSON array as mcpd gave it.
type serverItems struct {
	server string
	items  json.RawMessage
}

// listing is one list in the making.
type listing struct {
	method string
	aggr   bool            // several servers: names follow the prefix mode
	shared map[string]bool // on-collision: the names several servers list; nil: prefix always
	items  []json.RawMessage
	seen   map[string]string // exposed name → server
	routes map[string]route  // exposed name → where it goes
	// params: tool name → Mcp-Param header name → argument (httpheaders.go)
	params map[string]map[string]string
	uris   map[string]string // resource URI or template → server
	// uiURIs: the ui:// resource of a tool (_meta.ui.resourceUri) → the
	// tool's server, where a read of it goes
	uiURIs map[string]string
	// shadowed says of each URI a later server lists again that it is
	// left out (the host cannot tell two of one URI apart).
	shadowed []string
	// lenient: a clash of exposed names leaves the later item out (with
	// a warning in clashes) instead of failing the list.
	lenient bool
	clashes []string
}

// noteURI records that server lists uri and reports whether its item goes
// into the list: serving several, the first server to list a URI has it,
// and reads of it go there.
func (l *listing) noteURI(server, uri string) bool {
	if first, ok := l.uris[uri]; ok && l.aggr && first != server {
		kind := "resource"
		if l.method == "resources/templates/list" {
			kind = "resource template"
		}
		l.shadowed = append(l.shadowed, fmt.Sprintf("%s %q of server %q is left out: server %q lists it too, and reads of it go there",
			kind, uri, server, first))
		return false
	}
	l.uris[uri] = server
	return true
}

// nameItems merges the items of the servers into one list: tools and
// prompts under their exposed names, each with its route, resources
// noting their server. Two items under one exposed name are an error: a
// clash is never a silent shadow.
//
// ghosts are the items of servers left out of this list (too slow), as
// the last list had them: under on-collision prefixes a name they share
// stays prefixed, so that a server being slow renames no other's items.
func nameItems(method string, got []serverItems, aggr bool, mode profile.Prefix, ghosts []serverItems, lenient bool) (*listing, *jsonrpc.Error) {
	l := &listing{method: method, aggr: aggr, lenient: lenient, seen: map[string]string{},
		routes: map[string]route{}, params: map[string]map[string]string{}, uris: map[string]string{}, uiURIs: map[string]string{}}
	if aggr && mode == profile.PrefixOnCollision && (method == "tools/list" || method == "prompts/list") {
		l.shared = sharedNames(append(slices.Clip(got), ghosts...))
	}
	for _, si := range got {
		if err := l.addItems(si.server, si.items); err != nil {
			return nil, err
		}
	}
	if l.items == nil {
		l.items = []json.RawMessage{}
	}
	return l, nil
}

// clash handles err, a clash of two items' exposed names: the list's
// error, or, lenient, a warning and the later item left out.
func (l *listing) clash(err *jsonrpc.Error) *jsonrpc.Error {
	if !l.lenient {
		return err
	}
	l.clashes = append(l.clashes, err.Message+"; the second is left out")
	return nil
}

// exposedName is how the host sees item name of server.
func (l *listing) exposedName(server, name string) string {
	if !l.aggr || l.shared != nil && !l.shared[name] {
		return name
	}
	return prefixed(server, name)
}

// expose records the item name of server under its exposed name, which it
// returns; a second item under one exposed name is an error.
func (l *listing) expose(server, name string) (string, *jsonrpc.Error) {
	exposed := l.exposedName(server, name)
	if l.aggr {
		if other, clash := l.seen[exposed]; clash {
			how := ""
			if exposed != name {
				how = " after prefixing"
			}
			return "", jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s name %q of server %q clashes with one of server %q%s",
				strings.TrimSuffix(l.method, "s/list"), exposed, server, other, how)
		}
		l.seen[exposed] = server
	}
	l.routes[exposed] = route{server: server, name: name}
	return exposed, nil
}

// sharedNames are the item names that more than one server lists.
func sharedNames(got []serverItems) map[string]bool {
	first := map[string]string{} // name → the first server listing it
	shared := map[string]bool{}
	for _, si := range got {
		for _, name := range itemNames(si.items) {
			if s, ok := first[name]; ok && s != si.server {
				shared[name] = true
			} else if !ok {
				first[name] = si.server
			}
		}
	}
	return shared
}

// itemNames are the "name" members of items, a JSON array.
func itemNames(items json.RawMessage) []string {
	var names []string
	if elems, ok := arrayElements(items); ok {
		for _, it := range elems {
			if ms, ok := jsonrpc.Members(it); ok {
				names = append(names, textOf(lastMember(ms, "name")))
				continue
			}
			var v struct{ Name string }
			_ = json.Unmarshal(it, &v)
			names = append(names, v.Name)
		}
		return names
	}
	var arr []struct{ Name string }
	_ = json.Unmarshal(items, &arr)
	for _, it := range arr {
		names = append(names, it.Name)
	}
	return names
}

// lastMember is the value of the last member key of ms, as decoding into
// a map has it; nil when there is none.
func lastMember(ms []jsonrpc.Member, key string) json.RawMessage {
	var v json.RawMessage
	for _, m := range ms {
		if m.Key == key {
			v = m.Value
		}
	}
	return v
}

// textOf is the string raw holds ("" when it holds none).
func textOf(raw json.RawMessage) string {
	if s, ok := jsonrpc.PlainText(raw); ok {
		return s
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// HostTools is the tools list a bridge serving lists would give its host:
// merged, named by mode when aggr (several servers, or every server of
// mcpd or of a profile), as JSON items. Servers that failed are left out.
func HostTools(lists []service.ServerList, aggr bool, mode profile.Prefix) ([]json.RawMessage, error) {
	var got []serverItems
	for _, e := range lists {
		if e.Error != nil || e.Unavailable != "" {
			continue
		}
		got = append(got, serverItems{server: e.Server, items: e.Items})
	}
	l, err := nameItems("tools/list", got, aggr, mode, nil, false)
	if err != nil {
		return nil, errors.New(err.Message)
	}
	var items []json.RawMessage
	for _, frag := range l.items {
		// A fragment may hold a server's whole list: split it into items.
		if elems, ok := arrayElements(append(append([]byte{'['}, frag...), ']')); ok {
			items = append(items, elems...)
		} else {
			items = append(items, frag)
		}
	}
	return items, nil
}

// addItems adds the items server listed (a JSON array) to l: tools and
// prompts under their exposed names, resources noting their server.
func (l *listing) addItems(server string, arr json.RawMessage) *jsonrpc.Error {
	if !l.aggr && (l.method == "prompts/list" || l.method == "tools/list" && !bytes.Contains(arr, []byte("x-mcp-header"))) {
		// Served alone, the names are not prefixed and no route is needed
		// (unless a tool declares x-mcp-header arguments, which are recorded):
		// the list leaves mcpd's cache and reaches the host unchanged.
		if inner, ok := arrayInner(arr); ok {
			if len(inner) > 0 {
				l.items = append(l.items, inner)
			}
			return nil
		}
	}
	if elems, ok := arrayElements(arr); ok {
		for _, it := range elems {
			if err := l.addItem(server, it); err != nil {
				return err
			}
		}
		return nil
	}
	return l.addDecoded(server, arr)
}

// addItem adds one item to l as mcpd passed it, with its name replaced
// when prefixed; an item whose members do not scan is decoded instead.
func (l *listing) addItem(server string, it json.RawMessage) *jsonrpc.Error {
	ms, ok := jsonrpc.Members(it)
	if !ok {
		return l.addDecoded(server, json.RawMessage("["+string(it)+"]"))
	}
	switch l.method {
	case "tools/list", "prompts/list":
		nameRaw := lastMember(ms, "name")
		name := textOf(nameRaw)
		exposed, err := l.expose(server, name)
		if err != nil {
			return l.clash(err)
		}
		if exposed != name {
			it = renamed(it, ms, nameRaw, exposed)
		}
		if l.method == "tools/list" {
			if hs := paramHeaders(lastMember(ms, "inputSchema")); hs != nil {
				l.params[exposed] = hs
			}
			if uri := uiResourceURI(lastMember(ms, "_meta")); uri != "" {
				l.uiURIs[uri] = server
			}
		}
	case "resources/list", "resources/templates/list":
		key := "uri"
		if l.method == "resources/templates/list" {
			key = "uriTemplate"
		}
		if !l.noteURI(server, textOf(lastMember(ms, key))) {
			return nil
		}
	}
	l.items = append(l.items, it)
	return nil
}

// renamed is item with its "name" members' value nameRaw replaced by
// name (added first when it has none).
func renamed(it json.RawMessage, ms []jsonrpc.Member, nameRaw json.RawMessage, name string) json.RawMessage {
	q, err := jsonrpc.AppendString(nil, name)
	if err != nil {
		q = []byte(`""`)
	}
	if nameRaw == nil {
		return spliceFirst(it, `"name":`+string(q))
	}
	last := 0 // the "name" member that counts, as decoding into a map has it
	for i, m := range ms {
		if m.Key == "name" {
			last = i
		}
	}
	out := make([]byte, 0, len(it)+len(q))
	out = append(out, '{')
	for i, m := range ms {
		switch {
		case i == last:
			out = appendMember(out, append([]byte(`"name":`), q...))
		case m.Key != "name":
			out = appendMember(out, m.Span)
		}
	}
	return append(out, '}')
}

// arrayInner is arr, a JSON array, without its brackets.
func arrayInner(arr []byte) ([]byte, bool) {
	i := jsonrpc.SkipSpace(arr, 0)
	j := len(arr)
	for j > i && (arr[j-1] == ' ' || arr[j-1] == '\t' || arr[j-1] == '\n' || arr[j-1] == '\r') {
		j--
	}
	if j-i < 2 || arr[i] != '[' || arr[j-1] != ']' || jsonrpc.ValueEnd(arr, i) != j {
		return nil, false
	}
	inner := arr[i+1 : j-1]
	if jsonrpc.SkipSpace(inner, 0) == len(inner) {
		return nil, true
	}
	return inner, true
}

// arrayElements are the elements of arr, a JSON array, as slices of it.
func arrayElements(arr []byte) ([]json.RawMessage, bool) {
	inner, ok := arrayInner(arr)
	if !ok {
		return nil, false
	}
	var out []json.RawMessage
	for i := jsonrpc.SkipSpace(inner, 0); i < len(inner); {
		end := jsonrpc.ValueEnd(inner, i)
		if end < 0 {
			// A number at the very end has no delimiter after it.
			if end = len(inner); inner[i] == '{' || inner[i] == '[' || inner[i] == '"' {
				return nil, false
			}
		}
		out = append(out, inner[i:end])
		i = jsonrpc.SkipSpace(inner, end)
		if i < len(inner) {
			if inner[i] != ',' {
				return nil, false
			}
			i = jsonrpc.SkipSpace(inner, i+1)
		}
	}
	return out, true
}

// addDecoded is addItems through encoding/json: for items that do not
// scan.
func (l *listing) addDecoded(server string, items json.RawMessage) *jsonrpc.Error {
	var arr []map[string]json.RawMessage
	if err := json.Unmarshal(items, &arr); err != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q: bad %s items: %v", server, l.method, err)
	}
	for _, it := range arr {
		switch l.method {
		case "tools/list", "prompts/list":
			var name string
			_ = json.Unmarshal(it["name"], &name)
			exposed, err := l.expose(server, name)
			if err != nil {
				if err = l.clash(err); err != nil {
					return err
				}
				continue
			}
			if exposed != name {
				it["name"], _ = json.Marshal(exposed)
			}
			if l.method == "tools/list" {
				if hs := paramHeaders(it["inputSchema"]); hs != nil {
					l.params[exposed] = hs
				}
				if uri := uiResourceURI(it["_meta"]); uri != "" {
					l.uiURIs[uri] = server
				}
			}
		case "resources/list", "resources/templates/list":
			key := "uri"
			if l.method == "resources/templates/list" {
				key = "uriTemplate"
			}
			var uri string
			_ = json.Unmarshal(it[key], &uri)
			if !l.noteURI(server, uri) {
				continue
			}
		}
		raw, err := json.Marshal(it)
		if err != nil {
			return jsonrpc.Errorf(jsonrpc.CodeInternalError, "encode item: %v", err)
		}
		l.items = append(l.items, raw)
	}
	return nil
}
