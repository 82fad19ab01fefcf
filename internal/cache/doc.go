// Package cache is mcpd's per-server result cache: it answers repeated
// tools/list, prompts/list, resources/list, resources/templates/list and
// resources/read requests from memory, coalesces concurrent identical misses
// into one upstream request (single-flight), and decides how long a result
// stays valid.
//
// # Validity
//
// A result is stored only if something says it stays valid, and it is served
// while at least one of these holds (docs/subscriptions.md; the MCP
// specification's caching of list and read results):
//
//   - the server's modern ttlMs > 0 has not expired ("works like HTTP
//     max-age: fresh while now < t_received + ttlMs");
//   - the server promised change notifications for that kind of result —
//     legacy listChanged, a modern listen that mcpd keeps open and the server
//     acknowledged, or an acknowledged subscription to the resource — and the
//     matching notification has not arrived (Promises);
//   - the per-server config policy says so (Policy: a TTL, or "always").
//
// With none of these (for example a modern server answering ttlMs 0 and no
// listen), a result is never served from memory: ttlMs 0 means "stale
// immediately". Concurrent identical requests are still coalesced. The
// policy "never" turns the cache and coalescing off for a server.
//
// A promise only counts for a result if it was already in effect when the
// request for that result was sent, so a notification that predates the
// promise can never leave a stale entry behind.
//
// # Invalidation
//
// Invalidate (by kind, by resource URI or everything) removes matching
// entries at once and detaches matching requests in flight: their result is
// still handed to the callers that were already waiting, but it is not
// stored, and later callers start a fresh request. A caller that asks after
// the invalidation returned therefore never sees an older result.
//
// # Bounds
//
// resources/read results live in an LRU bounded by entry count and bytes
// (Options.MaxReadEntries, Options.MaxReadBytes); list results in a smaller
// LRU of their own, so reads never evict the lists.
//
// The package imports only the standard library; the supervisor wires it to
// sessions and notifications.
package cache
