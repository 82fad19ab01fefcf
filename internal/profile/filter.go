package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// listKinds maps the MCP list methods to the key of their items that the
// rules match and the member of their result that holds the items.
var listKinds = map[string]struct{ itemKey, resultKey string }{
	"tools/list":               {"name", "tools"},
	"prompts/list":             {"name", "prompts"},
	"resources/list":           {"uri", "resources"},
	"resources/templates/list": {"uriTemplate", "resourceTemplates"},
}

// IsList reports whether method is one of the list methods a profile
// filters.
func IsList(method string) bool {
	_, ok := listKinds[method]
	return ok
}

// rules returns the rules of a list method's items.
func (s *Server) rules(method string) *Rules {
	switch method {
	case "tools/list":
		return &s.Tools
	case "prompts/list":
		return &s.Prompts
	case "resources/list", "resources/templates/list":
		return &s.Resources
	}
	return nil
}

// filterMemo is the last list a Server filtered for one method: lists are
// served from mcpd's cache, so the same bytes come again and again.
type filterMemo struct {
	in, out []byte
}

// memos holds one filterMemo per list method, indexed by memoIndex.
type memos [4]atomic.Pointer[filterMemo]

func memoIndex(method string) int {
	switch method {
	case "tools/list":
		return 0
	case "prompts/list":
		return 1
	case "resources/list":
		return 2
	}
	return 3
}

// FilterItems returns the items of a list (a JSON array, as mcpd's List
// RPCs carry them) that the profile shows, tools with their overrides
// applied. items is returned as it is when nothing changes.
func (s *Server) FilterItems(method string, items []byte) ([]byte, error) {
	r := s.rules(method)
	if r == nil || r.open() || len(bytes.TrimSpace(items)) == 0 {
		return items, nil
	}
	slot := &s.memo[memoIndex(method)]
	if m := slot.Load(); m != nil && bytes.Equal(m.in, items) {
		return m.out, nil
	}
	out, err := filterArray(r, listKinds[method].itemKey, items)
	if err != nil {
		return nil, fmt.Errorf("%s items: %w", method, err)
	}
	slot.Store(&filterMemo{in: bytes.Clone(items), out: out})
	return out, nil
}

// FilterResult filters the items of a list method's JSON-RPC result (an
// object holding them under "tools", "prompts", ...), leaving its other
// members (nextCursor, _meta) as they are.
func (s *Server) FilterResult(method string, result []byte) ([]byte, error) {
	r := s.rules(method)
	if r == nil || r.open() {
		return result, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(result, &top); err != nil || top == nil {
		return nil, fmt.Errorf("%s result: want a JSON object", method)
	}
	key := listKinds[method].resultKey
	items, ok := top[key]
	if !ok {
		return result, nil
	}
	filtered, err := filterArray(r, listKinds[method].itemKey, items)
	if err != nil {
		return nil, fmt.Errorf("%s result: %w", method, err)
	}
	top[key] = filtered
	return json.Marshal(top)
}

// itemIDs are the members the rules match items by.
type itemIDs struct {
	Name        string `json:"name"`
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
}

func (ids *itemIDs) get(key string) string {
	switch key {
	case "uri":
		return ids.URI
	case "uriTemplate":
		return ids.URITemplate
	}
	return ids.Name
}

// filterArray keeps the items of the JSON array items that r shows.
func filterArray(r *Rules, key string, items []byte) ([]byte, error) {
	var arr []json.RawMessage
	if err := json.Unmarshal(items, &arr); err != nil {
		return nil, fmt.Errorf("want a JSON array: %w", err)
	}
	out := make([]json.RawMessage, 0, len(arr))
	changed := false
	for _, it := range arr {
		var ids itemIDs
		_ = json.Unmarshal(it, &ids) // an item that is no object has no name: rules with an allow list hide it
		id := ids.get(key)
		if !r.Allows(id) {
			changed = true
			continue
		}
		if ov, ok := r.Overrides[id]; ok && key == "name" {
			o, err := applyOverride(it, ov)
			if err != nil {
				return nil, err
			}
			it, changed = o, true
		}
		out = append(out, it)
	}
	if !changed {
		return items, nil
	}
	return json.Marshal(out)
}

// applyOverride sets the title and description of one tool.
func applyOverride(item json.RawMessage, ov Override) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(item, &m); err != nil || m == nil {
		return item, nil
	}
	for key, v := range map[string]*string{"title": ov.Title, "description": ov.Description} {
		if v == nil {
			continue
		}
		b, err := json.Marshal(*v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", key, err)
		}
		m[key] = b
	}
	return json.Marshal(m)
}
