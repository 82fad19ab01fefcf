package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is the family of results a notification invalidates.
type Kind uint8

// Kinds of cached results.
const (
	// KindTools: tools/list, invalidated by notifications/tools/list_changed.
	KindTools Kind = iota
	// KindPrompts: prompts/list, invalidated by notifications/prompts/list_changed.
	KindPrompts
	// KindResources: resources/list and resources/templates/list,
	// invalidated by notifications/resources/list_changed.
	KindResources
	// KindRead: resources/read of one URI, invalidated by
	// notifications/resources/updated for that URI (or a URI it contains).
	KindRead
	numKinds
)

func (k Kind) String() string {
	switch k {
	case KindTools:
		return "tools"
	case KindPrompts:
		return "prompts"
	case KindResources:
		return "resources"
	case KindRead:
		return "read"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Cacheable methods and their kinds.
var methodKinds = map[string]Kind{
	"tools/list":               KindTools,
	"prompts/list":             KindPrompts,
	"resources/list":           KindResources,
	"resources/templates/list": KindResources,
	"resources/read":           KindRead,
}

// KindOf returns the kind of a cacheable method; ok is false for every other
// method (tools/call, prompts/get, completion/complete, ... are never cached).
func KindOf(method string) (k Kind, ok bool) {
	k, ok = methodKinds[method]
	return k, ok
}

// Key identifies one cached result: the method plus the params that affect
// the result ("Cache key = method + the params that affect the result (e.g.
// uri, cursor); never serve a cached response for different params").
// Per-app _meta (clientInfo, clientCapabilities, progressToken) is ignored
// here; Scoped adds the client's declaration where it can shape the result.
type Key struct {
	Kind Kind
	// URI is the resource of a KindRead key.
	URI string
	// id is the map key: method, a separator and the canonical params.
	id string
}

// String returns the key's identity, for logs and tests.
func (k Key) String() string { return k.id }

// ErrNotCacheable is returned by NewKey and ListKey for requests that must
// always go upstream.
var ErrNotCacheable = errors.New("cache: request not cacheable")

// NewKey returns the key of one request as sent upstream (one page of a
// list, or one resources/read). It fails with ErrNotCacheable for methods
// that are never cached and for requests carrying inputResponses or
// requestState ("Requests carrying inputResponses or requestState are never
// cached"), and for params that are not a JSON object.
func NewKey(method string, params json.RawMessage) (Key, error) {
	return newKey("", method, params, false)
}

// ListKey returns the key of a whole list (every page fetched and merged)
// for one of the four list methods; any cursor in params is ignored since a
// merged list always starts from the first page.
func ListKey(method string, params json.RawMessage) (Key, error) {
	if k, ok := KindOf(method); !ok || k == KindRead {
		return Key{}, fmt.Errorf("%w: %q is not a list method", ErrNotCacheable, method)
	}
	return newKey("all:", method, params, true)
}

func newKey(prefix, method string, params json.RawMessage, dropCursor bool) (Key, error) {
	kind, ok := KindOf(method)
	if !ok {
		return Key{}, fmt.Errorf("%w: method %q", ErrNotCacheable, method)
	}
	p := bytes.TrimSpace(params)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) || bytes.Equal(p, []byte("{}")) {
		if kind == KindRead {
			return Key{}, fmt.Errorf("%w: resources/read without uri", ErrNotCacheable)
		}
		return Key{Kind: kind, id: prefix + method}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(p, &top); err != nil || top == nil {
		return Key{}, fmt.Errorf("%w: params are not a JSON object", ErrNotCacheable)
	}
	if _, ok := top["inputResponses"]; ok {
		return Key{}, fmt.Errorf("%w: request carries inputResponses", ErrNotCacheable)
	}
	if _, ok := top["requestState"]; ok {
		return Key{}, fmt.Errorf("%w: request carries requestState", ErrNotCacheable)
	}
	delete(top, "_meta")
	if dropCursor {
		delete(top, "cursor")
	}
	key := Key{Kind: kind}
	if kind == KindRead {
		if json.Unmarshal(top["uri"], &key.URI) != nil || key.URI == "" {
			return Key{}, fmt.Errorf("%w: resources/read without a string uri", ErrNotCacheable)
		}
	}
	if len(top) == 0 {
		key.id = prefix + method
		return key, nil
	}
	// encoding/json sorts map keys and compacts raw values, so two requests
	// that differ only in key order or spacing share a key.
	canon, err := json.Marshal(top)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %v", ErrNotCacheable, err)
	}
	key.id = prefix + method + " " + string(canon)
	return key, nil
}

// Hints reads the caching hints of one result: ttl is its ttlMs (zero when
// absent or negative: "Absent (old servers) ⇒ treat as 0. Negative ⇒ ignore,
// treat as 0"), and storable is false for results that must never be stored
// ("never input_required results") or that are not JSON objects.
func Hints(result json.RawMessage) (ttl time.Duration, storable bool) {
	var h struct {
		ResultType string          `json:"resultType"`
		TTLMs      json.RawMessage `json:"ttlMs"`
	}
	if err := json.Unmarshal(result, &h); err != nil {
		return 0, false
	}
	// "A client must treat an unrecognized resultType as invalid, and an
	// absent one as complete."
	if h.ResultType != "" && h.ResultType != "complete" {
		return 0, false
	}
	var ms float64
	if len(h.TTLMs) > 0 && json.Unmarshal(h.TTLMs, &ms) == nil && ms > 0 {
		const maxMs = float64(1<<63-1) / float64(time.Millisecond)
		ms = min(ms, maxMs)
		ttl = time.Duration(ms * float64(time.Millisecond))
	}
	return ttl, true
}

// Change is what one child notification invalidates.
type Change struct {
	// Kind is the invalidated kind; for KindRead, URI is the updated resource.
	Kind Kind
	URI  string
}

// ChangeOf maps a notification to the results it invalidates; ok is false
// for notifications that do not concern the cache.
func ChangeOf(method string, params json.RawMessage) (c Change, ok bool) {
	switch method {
	case "notifications/tools/list_changed":
		return Change{Kind: KindTools}, true
	case "notifications/prompts/list_changed":
		return Change{Kind: KindPrompts}, true
	case "notifications/resources/list_changed":
		return Change{Kind: KindResources}, true
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			// An update of an unknown resource: drop every read.
			return Change{Kind: KindRead}, true
		}
		return Change{Kind: KindRead, URI: p.URI}, true
	}
	return Change{}, false
}

// affects reports whether an update of changed affects a cached read of
// uri: the same URI, or one contains the other ("uri may be a sub-resource
// of the subscribed URI"). It errs on the side of invalidating.
func affects(changed, uri string) bool {
	return strings.HasPrefix(uri, changed) || strings.HasPrefix(changed, uri)
}

// covers reports whether a subscription to sub promises updates of uri: the
// same URI or a sub-resource of it (a path, query or fragment below it).
func covers(sub, uri string) bool {
	if !strings.HasPrefix(uri, sub) {
		return false
	}
	if len(uri) == len(sub) || strings.HasSuffix(sub, "/") {
		return true
	}
	switch uri[len(sub)] {
	case '/', '?', '#':
		return true
	}
	return false
}

// Scoped returns k narrowed to the hosts whose declaration has the scope
// digest: "" leaves k as it is. A modern server may shape a
// list or a read by the clientCapabilities of the request (MCP Apps lists
// its UI tools only to a client that declared the extension), so one
// host's shaped answer is never served to, nor shared in flight with, a
// host that declared otherwise.
func (k Key) Scoped(scope string) Key {
	if scope == "" {
		return k
	}
	k.id += "\x00caps:" + scope
	return k
}
