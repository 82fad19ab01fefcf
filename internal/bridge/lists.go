package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// list returns the merged items of method over the served servers; names
// follow the prefix mode when serving several, and routes are recorded.
// Serving several, a server that cannot serve now is left out
// (missing.go). Each element of items is one or more items,
// comma-separated, as they go into the result's array (a server's whole
// list when it passes unchanged).
func (b *bridge) list(ctx context.Context, method string) ([]json.RawMessage, *jsonrpc.Error) {
	items, _, err := b.listNoted(ctx, method, false)
	return items, err
}

// listAll is list waiting for every server, however slow: for a lookup
// of a name or URI no list had yet.
func (b *bridge) listAll(ctx context.Context, method string) *jsonrpc.Error {
	_, _, err := b.listNoted(ctx, method, true)
	return err
}

// listNoted is list, with the warnings about servers too slow for it
// (told to the operator and to a legacy host already, the first time).
func (b *bridge) listNoted(ctx context.Context, method string, patient bool) ([]json.RawMessage, []string, *jsonrpc.Error) {
	if err := b.ready(ctx); err != nil {
		return nil, nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", err.Error())
	}
	_, setup := listsBy(ctx)
	if !patient {
		ctx = b.firstList(ctx, method)
	}
	listed, lerr := b.listServers(ctx, method, patient)
	if lerr != nil {
		return nil, nil, b.rpcToMCP(ctx, lerr, "")
	}
	var got []serverItems
	var back bool
	slow := map[string]bool{}
	var notes []string
	for _, sl := range listed {
		n, entries, err := sl.server, sl.entries, sl.err
		if sl.slow {
			notes = append(notes, slowMessage(method, n, sl.waited, entries != nil))
			if sl.first {
				b.tell(notes[len(notes)-1])
			}
			if entries == nil {
				slow[n] = true
				continue
			}
		}
		if err != nil && (!b.aggr || ctx.Err() != nil || b.work.Err() != nil || b.mcpdDown()) {
			return nil, nil, b.rpcToMCP(ctx, err, n)
		}
		if err != nil && b.opts.Profile != "" && service.CodeOf(err) == service.NotFound {
			// A reload took the server, or the profile, away: it is not
			// down, and will not come back by running again.
			b.warnOnce(fmt.Sprintf("server %q is left out: %v", n, err))
			continue
		}
		if err != nil {
			b.serverDown(n, failedReason(n, err))
			continue
		}
		items, up, ierr := b.entriesOf(n, entries)
		if ierr != nil {
			return nil, nil, ierr
		}
		got, back = append(got, items...), back || up
	}
	// "A clash is an error at start-up, not a silent shadow"; once the
	// bridge is up, one server's new name breaks no one's list.
	mode, lenient := b.prefixMode(), b.isUp()
	var l *listing
	if len(slow) == 0 {
		l = b.lastListing(method, got, mode, lenient) // its routes are set
	}
	if l == nil {
		var err *jsonrpc.Error
		if l, err = nameItems(method, got, b.aggr, mode, b.slowNames(method, slow), lenient); err != nil {
			return nil, nil, err
		}
		for _, msg := range append(l.shadowed, l.clashes...) {
			b.warnOnce(msg)
		}
		b.setRoutes(l, slow, got, mode)
	}
	if b.aggr && !setup {
		b.noteListed(method, listed)
	}
	if back {
		// A server missing until now serves again: learn what it offers,
		// and have the host list again what this list did not ask for.
		b.refreshInfo(ctx)
		b.announceLists(false)
	}
	return slices.Clip(l.items), notes, nil // a listing's items are shared (listmemo.go)
}

// entriesOf are the items of server's list entries; back says the server
// was missing until now. Served alone, an error or an unavailable server
// fails the list; serving several, such a server is left out.
func (b *bridge) entriesOf(n string, entries []service.ServerList) (got []serverItems, back bool, err *jsonrpc.Error) {
	for _, e := range entries {
		switch {
		case e.Error != nil && !b.aggr:
			return nil, false, e.Error
		case e.Unavailable != "" && !b.aggr:
			return nil, false, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", e.Unavailable) // names the server
		case e.Unavailable != "":
			b.serverDown(n, e.Unavailable) // names the server
			continue
		}
		back = b.serverUp(n) || back
		if e.Error != nil {
			continue // aggregated: a server without this kind of item
		}
		got = append(got, serverItems{server: n, items: e.Items})
	}
	return got, back, nil
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

// listOne lists method of server for the host: with its clientInfo and
// the clientCapabilities the list is made for (listCaps), which a modern
// server may shape the list by (MCP Apps lists UI tools only to a client
// that declared the extension).
func (b *bridge) listOne(ctx context.Context, method, server string) ([]service.ServerList, error) {
	var o service.Options
	if b.opts.CallOptions != nil {
		o = b.opts.CallOptions()
	}
	b.mu.Lock()
	info := b.hostInfo
	b.mu.Unlock()
	o.Client = service.Client{} // the host's, or none: not the options'
	if c := b.client(info); c != nil {
		o.Client = *c
	}
	if caps := b.listCaps(ctx); len(caps) > 0 && caps[0] == '{' {
		o.ClientCapabilities = caps
	}
	return b.be.List(ctx, server, method, o)
}

// listCapsKey marks a context with the clientCapabilities its lists are
// made for.
type listCapsKey struct{}

// withListCaps marks ctx's lists as made for a host that declared caps
// (a modern request's own declaration).
func withListCaps(ctx context.Context, caps json.RawMessage) context.Context {
	if caps == nil {
		caps = json.RawMessage{} // declared nothing, which is not "unknown"
	}
	return context.WithValue(ctx, listCapsKey{}, caps)
}

// listCaps is the declaration ctx's lists are made for: a modern
// request's (withListCaps), else what the legacy host declared at
// initialize (nil before it did: none).
func (b *bridge) listCaps(ctx context.Context) json.RawMessage {
	if c, ok := ctx.Value(listCapsKey{}).(json.RawMessage); ok {
		return c
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hostCaps
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

// listResult is the result of a list method with items (list's
// fragments), written as bytes: the items are not encoded again. A modern
// host's carries the bridge's serverInfo in its _meta already, so that
// the result is written once.
func (b *bridge) listResult(r *hostReq, method string, items []json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var info json.RawMessage
	if r.modern {
		info = b.serverInfo()
	}
	if res, ok := b.lastResult(method, items, r.modern, info); ok {
		r.stamped = r.modern && len(info) > 0 // as itemsResult does
		return res, nil
	}
	res, err := itemsResult(r, jsonrpc.ListKeys[method], items, info)
	if err == nil {
		b.keepResult(method, items, r.modern, info, res)
	}
	return res, err
}

// itemsResult is a one-page list result holding items under key (skills,
// tasks, tools…), written as bytes; for a modern host, with info as its
// _meta's serverInfo when given (then r.stamped: withServerInfo has
// nothing left to do).
func itemsResult(r *hostReq, key string, items []json.RawMessage, info json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	n := 128 + len(info) // the key, the modern members and _meta
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(append(append(out, `{"`...), key...), `":[`...)
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	out = append(out, ']')
	if r.modern {
		// Modern list results "must carry ttlMs and cacheScope"; mcpd
		// caches, so the host need not.
		out = append(out, `,"resultType":"complete","ttlMs":0,"cacheScope":"private"`...)
		if len(info) > 0 {
			out = append(append(append(out, `,"_meta":{"`+jsonrpc.MetaServerInfo+`":`...), info...), '}')
			r.stamped = true
		}
	}
	return append(out, '}'), nil
}

// uiResourceURI is the MCP Apps UI resource a tool's _meta names:
// _meta.ui.resourceUri, or the older flat _meta["ui/resourceUri"]; "" when
// none. The tool passes unchanged (its name alone is prefixed), and a read
// of the resource through this door goes to the tool's server.
func uiResourceURI(meta json.RawMessage) string {
	if len(meta) == 0 || !bytes.Contains(meta, []byte("resourceUri")) {
		return "" // the common case: no JSON work
	}
	var m struct {
		UI struct {
			ResourceURI string `json:"resourceUri"`
		} `json:"ui"`
		Flat string `json:"ui/resourceUri"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	if m.UI.ResourceURI != "" {
		return m.UI.ResourceURI
	}
	return m.Flat
}
