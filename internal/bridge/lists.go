package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// list returns the merged items of method over the served servers; names
// follow the prefix mode when serving several, and routes are recorded.
// Serving several, a server that cannot serve now is left out
// (missing.go).
func (b *bridge) list(ctx context.Context, method string) ([]json.RawMessage, *jsonrpc.Error) {
	if err := b.ready(ctx); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", err.Error())
	}
	var got []serverItems
	var back bool
	for _, n := range b.names {
		entries, err := b.listOne(ctx, method, n)
		if err != nil && (!b.aggr || ctx.Err() != nil || b.mcpdDown()) {
			return nil, b.rpcToMCP(ctx, err, n)
		}
		if err != nil {
			b.serverDown(n, b.be.Reason(err))
			continue
		}
		for _, e := range entries {
			switch {
			case e.GetError() != nil && !b.aggr:
				return nil, mcpErr(e.GetError())
			case e.GetUnavailable() != "" && !b.aggr:
				return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q is unavailable: %s", n, e.GetUnavailable())
			case e.GetUnavailable() != "":
				b.serverDown(n, e.GetUnavailable())
				continue
			}
			back = b.serverUp(n) || back
			if e.GetError() != nil {
				continue // aggregated: a server without this kind of item
			}
			items, err := parseItems(method, n, e.GetItemsJson())
			if err != nil {
				return nil, err
			}
			got = append(got, serverItems{server: n, items: items})
		}
	}
	l, err := nameItems(method, got, b.aggr, b.prefix)
	if err != nil {
		return nil, err
	}
	b.setRoutes(l)
	if back {
		// A server missing until now serves again: learn what it offers,
		// and have the host list again what this list did not ask for.
		b.refreshInfo(ctx)
		b.announceLists(false)
	}
	return l.items, nil
}

// serverItems are the items one server listed.
type serverItems struct {
	server string
	items  []map[string]json.RawMessage
}

// parseItems reads the items server listed (a JSON array).
func parseItems(method, server, itemsJSON string) ([]map[string]json.RawMessage, *jsonrpc.Error) {
	var arr []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(itemsJSON), &arr); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q: bad %s items: %v", server, method, err)
	}
	return arr, nil
}

// listing is one list in the making.
type listing struct {
	method string
	items  []json.RawMessage
	seen   map[string]string // exposed name → server
	routes map[string]route  // exposed name → where it goes
	// params: tool name → Mcp-Param header name → argument (httpheaders.go)
	params map[string]map[string]string
	uris   map[string]string // resource URI or template → server
}

// nameItems merges the items of the servers into one list: tools and
// prompts under their exposed names (exposedName), each with its route,
// resources noting their server. Two items under one exposed name are an
// error: a clash is never a silent shadow.
func nameItems(method string, got []serverItems, aggr bool, mode profile.Prefix) (*listing, *jsonrpc.Error) {
	l := &listing{method: method, items: []json.RawMessage{}, seen: map[string]string{},
		routes: map[string]route{}, params: map[string]map[string]string{}, uris: map[string]string{}}
	named := method == "tools/list" || method == "prompts/list"
	var shared map[string]bool
	if named && aggr && mode == profile.PrefixOnCollision {
		shared = sharedNames(got)
	}
	for _, si := range got {
		for _, it := range si.items {
			switch {
			case named:
				var name string
				_ = json.Unmarshal(it["name"], &name)
				exposed := name
				if aggr {
					if mode != profile.PrefixOnCollision || shared[name] {
						exposed = prefixed(si.server, name)
					}
					if other, clash := l.seen[exposed]; clash {
						return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s name %q of server %q clashes with one of server %q%s",
							strings.TrimSuffix(method, "s/list"), exposed, si.server, other, map[bool]string{true: " after prefixing"}[exposed != name])
					}
					l.seen[exposed] = si.server
					if exposed != name {
						it["name"], _ = json.Marshal(exposed)
					}
				}
				l.routes[exposed] = route{server: si.server, name: name}
				if method == "tools/list" {
					if hs := paramHeaders(it["inputSchema"]); hs != nil {
						l.params[exposed] = hs
					}
				}
			default:
				key := "uri"
				if method == "resources/templates/list" {
					key = "uriTemplate"
				}
				var uri string
				_ = json.Unmarshal(it[key], &uri)
				l.uris[uri] = si.server
			}
			raw, err := json.Marshal(it)
			if err != nil {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "encode item: %v", err)
			}
			l.items = append(l.items, raw)
		}
	}
	return l, nil
}

// sharedNames are the item names that more than one server lists.
func sharedNames(got []serverItems) map[string]bool {
	first := map[string]string{} // name → the first server listing it
	shared := map[string]bool{}
	for _, si := range got {
		for _, it := range si.items {
			var name string
			_ = json.Unmarshal(it["name"], &name)
			if s, ok := first[name]; ok && s != si.server {
				shared[name] = true
			} else if !ok {
				first[name] = si.server
			}
		}
	}
	return shared
}

// HostTools is the tools list a bridge serving lists would give its host:
// merged, named by mode when aggr (several servers, or every server of
// mcpd or of a profile), as JSON items. Servers that failed are left out.
func HostTools(lists []*mcpdv1.ServerList, aggr bool, mode profile.Prefix) ([]json.RawMessage, error) {
	var got []serverItems
	for _, e := range lists {
		if e.GetError() != nil || e.GetUnavailable() != "" {
			continue
		}
		items, err := parseItems("tools/list", e.GetServer(), e.GetItemsJson())
		if err != nil {
			return nil, errors.New(err.Message)
		}
		got = append(got, serverItems{server: e.GetServer(), items: items})
	}
	l, err := nameItems("tools/list", got, aggr, mode)
	if err != nil {
		return nil, errors.New(err.Message)
	}
	return l.items, nil
}

// setRoutes replaces the routes of a tools or prompts list's kind.
func (b *bridge) setRoutes(l *listing) {
	if l.method != "tools/list" && l.method != "prompts/list" {
		b.mu.Lock()
		maps.Copy(b.uris, l.uris)
		b.mu.Unlock()
		return
	}
	kind := strings.TrimSuffix(l.method, "/list")
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.routes {
		if strings.HasPrefix(k, kind+"\x00") {
			delete(b.routes, k)
		}
	}
	for k, r := range l.routes {
		b.routes[kind+"\x00"+k] = r
	}
	if kind == "tools" {
		b.toolParams = l.params
	}
}

// checkCursor rejects a list cursor the bridge did not issue. It issues
// none: every list is answered in one page (mcpd merges all the pages of
// each server), so a cursor is only valid when absent, null or empty
// (some hosts send the empty cursor for the first page). "Invalid cursor
// ⇒ -32602."
func checkCursor(r *hostReq) *jsonrpc.Error {
	raw, ok := r.params["cursor"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var cursor string
	if err := json.Unmarshal(raw, &cursor); err != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid cursor %s: a cursor is a string", raw)
	}
	if cursor == "" {
		return nil
	}
	return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid cursor %q: this server issued no cursor (it lists everything in one page); list again without one", cursor)
}

func (b *bridge) listOne(ctx context.Context, method, server string) ([]*mcpdv1.ServerList, error) {
	opts := b.opts.CallOptions()
	b.mu.Lock()
	opts.Client = clientInfoProto(b.hostInfo)
	b.mu.Unlock()
	return b.listFrom(ctx, method, server, opts)
}

// prefixed is server__name, shortened to fit the 128-character limit with a
// hash of the full name so that shortened names stay distinct.
func prefixed(server, name string) string {
	full := server + prefixSep + name
	if len(full) <= maxToolName {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	return full[:maxToolName-len(suffix)] + suffix
}

func listResult(r *hostReq, method string, items []json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	res := map[string]any{jsonrpc.ListKeys[method]: items}
	if r.modern {
		// Modern list results "must carry ttlMs and cacheScope"; mcpd
		// caches, so the host need not.
		res["resultType"] = "complete"
		res["ttlMs"] = 0
		res["cacheScope"] = "private"
	}
	return marshalResult(res)
}

// listFrom sends the list RPC of the MCP method ("tools/list", …).
func (b *bridge) listFrom(ctx context.Context, method, server string, opts *mcpdv1.CallOptions) ([]*mcpdv1.ServerList, error) {
	switch method {
	case "tools/list":
		r, err := b.be.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server, Options: opts})
		return r.GetServers(), err
	case "prompts/list":
		r, err := b.be.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: server, Options: opts})
		return r.GetServers(), err
	case "resources/list":
		r, err := b.be.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: server, Options: opts})
		return r.GetServers(), err
	case "resources/templates/list":
		r, err := b.be.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: server, Options: opts})
		return r.GetServers(), err
	}
	return nil, fmt.Errorf("no list rpc for %q", method)
}
