package config

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// keyClientCaps is the server key that changes the client capabilities
// mcpd declares to a legacy server at initialize.
const keyClientCaps = "clientCapabilities"

// ClientCaps (key "clientCapabilities") changes what mcpd declares to a
// legacy (2025-11-25) server at initialize, on top of what mcpd declares
// by itself (roots, sampling, elicitation form and url, the MCP Apps
// extension; see internal/supervisor/clientcaps.go):
//
//	"clientCapabilities": {
//	  "add":    {"extensions": {"com.example/widgets": {}}},
//	  "remove": ["sampling", "elicitation.url", "io.modelcontextprotocol/ui"]
//	}
//
// A modern server is not concerned: it sees each host's own declaration on
// every request.
type ClientCaps struct {
	// Add is a ClientCapabilities object merged over mcpd's declaration,
	// objects member by member (an extension is added or its settings
	// replaced by id). Compact JSON; nil when not set.
	Add json.RawMessage
	// Remove are the capabilities taken out after Add: a member
	// ("sampling", "roots", "elicitation", "experimental", "extensions"),
	// a member of one ("elicitation.url", "elicitation.form",
	// "sampling.tools", ...) or an extension by its id (anything with a
	// "/": "io.modelcontextprotocol/ui").
	Remove []string
}

// clientCapsMembers are the ClientCapabilities members "add" and "remove"
// may name (2025-11-25 and 2026-07-28 shapes).
var clientCapsMembers = []string{"roots", "sampling", "elicitation", "experimental", "extensions", "tasks"}

// clientCaps parses a server's "clientCapabilities" key.
func (p *parser) clientCaps(s *Server, server string, raw json.RawMessage) {
	members, ok := p.object(raw, server, keyClientCaps, "")
	if !ok {
		return
	}
	out := &ClientCaps{}
	for _, m := range members {
		key := keyClientCaps + "." + m.key
		switch m.key {
		case "add":
			out.Add = p.capsAdd(server, key, m.val)
		case "remove":
			out.Remove = p.capsRemove(server, key, m.val)
		default:
			p.fail(server, keyClientCaps, "unknown key %q%s", m.key, suggest(m.key, []string{"add", "remove"}))
		}
	}
	s.ClientCapabilities = out
}

// capsAdd reads "add": an object whose members are ClientCapabilities
// members holding objects, extensions named by their ids.
func (p *parser) capsAdd(server, key string, raw json.RawMessage) json.RawMessage {
	members, ok := p.object(raw, server, key, "")
	if !ok {
		return nil
	}
	for _, m := range members {
		mk := key + "." + m.key
		if !slices.Contains(clientCapsMembers, m.key) {
			p.fail(server, key, "unknown client capability %q%s (want one of %s)", m.key, suggest(m.key, clientCapsMembers), quoteList(clientCapsMembers))
			ok = false
			continue
		}
		if k := Kind(m.val); k != "object" {
			p.fail(server, mk, "a capability is a JSON object, got %s", k)
			ok = false
			continue
		}
		if m.key != "extensions" {
			continue
		}
		exts, eok := p.object(m.val, server, mk, "")
		if !eok {
			ok = false
			continue
		}
		for _, e := range exts {
			if !isExtensionID(e.key) {
				p.fail(server, mk, "%q is not an extension id: one is a reverse-DNS prefix, a slash and a name, such as \"io.modelcontextprotocol/ui\"", e.key)
				ok = false
			} else if k := Kind(e.val); k != "object" {
				p.fail(server, mk+"."+e.key, "an extension's settings are a JSON object, got %s", k)
				ok = false
			}
		}
	}
	if !ok {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		p.fail(server, key, "%v", err)
		return nil
	}
	return buf.Bytes()
}

// capsRemove reads "remove": an array of capability names.
func (p *parser) capsRemove(server, key string, raw json.RawMessage) []string {
	if k := Kind(raw); k != "array" {
		p.fail(server, key, "want an array of capability names, got %s", k)
		return nil
	}
	var names []json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil {
		p.fail(server, key, "%v", err)
		return nil
	}
	var out []string
	for _, n := range names {
		var v string
		if Kind(n) != "string" || json.Unmarshal(n, &v) != nil {
			p.fail(server, key, "want capability names (strings), got %s", Kind(n))
			continue
		}
		switch first, _, _ := strings.Cut(v, "."); {
		case strings.Contains(v, "/"):
			if !isExtensionID(v) {
				p.fail(server, key, "%q is not an extension id: one is a reverse-DNS prefix, a slash and a name, such as \"io.modelcontextprotocol/ui\"", v)
				continue
			}
		case !slices.Contains(clientCapsMembers, first) || strings.Count(v, ".") > 1 || strings.HasSuffix(v, "."):
			p.fail(server, key, "unknown client capability %q%s: name a capability (%s), one of its members (\"elicitation.url\") or an extension id", v, suggest(first, clientCapsMembers), quoteList(clientCapsMembers))
			continue
		}
		out = append(out, v)
	}
	return out
}

// isExtensionID reports whether id is "prefix/name" in the _meta key
// grammar: dot-separated labels (a letter first, a letter or digit last,
// hyphens inside), a slash, and a name of letters, digits and -_.
// (alphanumeric at both ends).
func isExtensionID(id string) bool {
	prefix, name, ok := strings.Cut(id, "/")
	if !ok || prefix == "" || name == "" {
		return false
	}
	for _, label := range strings.Split(prefix, ".") {
		if label == "" || !isLetter(label[0]) || !isAlnum(label[len(label)-1]) {
			return false
		}
		for i := range len(label) {
			if c := label[i]; !isAlnum(c) && c != '-' {
				return false
			}
		}
	}
	if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return false
	}
	for i := range len(name) {
		if c := name[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool  { return isLetter(c) || c >= '0' && c <= '9' }
