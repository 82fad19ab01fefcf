package pin

import (
	"encoding/json"
	"slices"
	"strings"
)

// A server that shapes its tools/list by the client's declared
// capabilities (a 2026-07-28 server sees every request's declaration: the
// MCP Apps gating pattern lists a UI variant of a tool to a client that
// declared the UI extension, a text-only variant to others) lists one tool
// differently to clients that declared differently. Its definitions are
// pinned per declaration variant, keyed as mcpd's cache keys the shaped
// answers (the digest of the declaration, jsonrpc.CapsDigest): each
// variant is pinned on its first use and compared with its own pins only,
// so two variants are never a change of one another, and a change of
// either is caught. A server that answers every client alike (a legacy
// server, told mcpd's declaration once) has the one shared variant.

// Variant names one declaration variant of a server's tools.
type Variant struct {
	// Key is the declaration's digest; "" is the shared variant.
	Key string
	// Capabilities is the declaration, shown with its changes (the first
	// one seen of the variant).
	Capabilities json.RawMessage
}

// variantKey is the key of server's variant in Book.servers.
func variantKey(server, variant string) string { return server + "\x00" + variant }

// variantsOf returns the states of server's variants seen so far, by key.
func (b *Book) variantsOf(name string) []*serverPins {
	prefix := variantKey(name, "")
	b.mu.Lock()
	var out []*serverPins
	for k, sp := range b.servers {
		if strings.HasPrefix(k, prefix) {
			out = append(out, sp)
		}
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(a, c *serverPins) int { return strings.Compare(a.variant.Key, c.variant.Key) })
	return out
}
