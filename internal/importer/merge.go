package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// ServerMaps reads the maps of servers of mcpd's config existing
// (at dest): "mcpServers" and VS Code's "servers", in that order, each with
// its members.
func ServerMaps(dest string, existing []byte) ([]ServerMap, error) {
	std := config.StripJSONComments(bytes.TrimPrefix(existing, []byte("\xef\xbb\xbf")))
	if err := json.Unmarshal(std, new(any)); err != nil {
		return nil, syntaxError(std, err)
	}
	top, err := objectMembers(std, "the file")
	if err != nil {
		return nil, err
	}
	var out []ServerMap
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		have, err := objectMembers(raw, fmt.Sprintf("%q", key))
		if err != nil {
			return nil, err
		}
		out = append(out, ServerMap{Key: key, Servers: have})
	}
	return out, nil
}

// ServerMap is one map of servers of mcpd's config.
type ServerMap struct {
	// Key is the map's key: "mcpServers" or "servers".
	Key string
	// Servers are its members, as written.
	Servers map[string]json.RawMessage
}

// MergeConfig adds servers (imported from file) to the existing config at
// dest, keeping its comments and every other key; the file is laid out
// anew by hujson's formatter. A server name already
// in dest is an error naming both entries, and nothing is merged.
func MergeConfig(dest string, existing []byte, file string, servers map[string]Server) ([]byte, error) {
	existing = bytes.TrimPrefix(existing, []byte("\xef\xbb\xbf"))
	maps, err := ServerMaps(dest, existing)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", dest, err)
	}
	into := ""
	var clashes []string
	for _, m := range maps {
		if into == "" {
			into = m.Key
		}
		for name, v := range m.Servers {
			s, ok := servers[name]
			if !ok {
				continue
			}
			var old struct{ Command any }
			_ = json.Unmarshal(v, &old)
			what := fmt.Sprintf("command %q", s.Command)
			if s.URL != "" {
				what = fmt.Sprintf("url %q", RemoteRef(s.URL))
			}
			clashes = append(clashes, fmt.Sprintf("server %q is both in %s (%q, command %q) and imported from %s (%s)",
				name, dest, m.Key, fmt.Sprint(old.Command), file, what))
		}
	}
	if len(clashes) > 0 {
		sort.Strings(clashes)
		return nil, fmt.Errorf("%s; rename one of the two (in either file) and import again; nothing was written", strings.Join(clashes, "; "))
	}
	return PatchServers(dest, existing, into, servers)
}

// PatchServers adds servers under the key into ("" : a new "mcpServers")
// of the HuJSON document existing, then formats it.
func PatchServers(dest string, existing []byte, into string, servers map[string]Server) ([]byte, error) {
	v, err := hujson.Parse(existing)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", dest, err)
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	if into == "" {
		into = "mcpServers"
		ops = append(ops, op{"add", "/mcpServers", map[string]any{}})
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	ptr := strings.NewReplacer("~", "~0", "/", "~1")
	for _, name := range names {
		ops = append(ops, op{"add", "/" + into + "/" + ptr.Replace(name), servers[name]})
	}
	patch, err := MarshalIndent(ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(patch); err != nil {
		return nil, fmt.Errorf("merge into %s: %w", dest, err)
	}
	v.Format()
	out := v.Pack()
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, nil
}
