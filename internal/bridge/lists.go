package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
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
		if err != nil && b.opts.Profile != "" && status.Code(err) == codes.NotFound {
			// A reload took the server, or the profile, away: it is not
			// down, and will not come back by running again.
			b.warnOnce(fmt.Sprintf("server %q is left out: %s", n, b.be.Reason(err)))
			continue
		}
		if err != nil {
			b.serverDown(n, b.be.Reason(err))
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
	l, err := nameItems(method, got, b.aggr, b.prefixMode(), b.slowNames(method, slow), b.isUp())
	if err != nil {
		return nil, nil, err
	}
	for _, msg := range append(l.shadowed, l.clashes...) {
		b.warnOnce(msg)
	}
	b.setRoutes(l, slow)
	if b.aggr && !setup {
		b.noteListed(method, listed)
	}
	if back {
		// A server missing until now serves again: learn what it offers,
		// and have the host list again what this list did not ask for.
		b.refreshInfo(ctx)
		b.announceLists(false)
	}
	return l.items, notes, nil
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
			return nil, false, jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q is unavailable: %s", n, e.Unavailable)
		case e.Unavailable != "":
			b.serverDown(n, e.Unavailable)
			continue
		}
		back = b.serverUp(n) || back
		if e.Error != nil {
			continue // aggregated: a server without this kind of item
		}
		got = append(got, serverItems{server: n, itemsJSON: bytesString(e.Items)})
	}
	return got, back, nil
}

// serverItems are the items one server listed, a JSON array as mcpd gave it.
type serverItems struct {
	server    string
	itemsJSON string
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
		if err := l.addItems(si.server, si.itemsJSON); err != nil {
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
		for _, name := range itemNames(si.itemsJSON) {
			if s, ok := first[name]; ok && s != si.server {
				shared[name] = true
			} else if !ok {
				first[name] = si.server
			}
		}
	}
	return shared
}

// itemNames are the "name" members of the items of itemsJSON.
func itemNames(itemsJSON string) []string {
	var names []string
	if elems, ok := arrayElements([]byte(itemsJSON)); ok {
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
	_ = json.Unmarshal([]byte(itemsJSON), &arr)
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
func HostTools(lists []*mcpdv1.ServerList, aggr bool, mode profile.Prefix) ([]json.RawMessage, error) {
	var got []serverItems
	for _, e := range lists {
		if e.GetError() != nil || e.GetUnavailable() != "" {
			continue
		}
		got = append(got, serverItems{server: e.GetServer(), itemsJSON: e.GetItemsJson()})
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
func (l *listing) addItems(server, itemsJSON string) *jsonrpc.Error {
	arr := []byte(itemsJSON)
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
	return l.addDecoded(server, itemsJSON)
}

// addItem adds one item to l as mcpd passed it, with its name replaced
// when prefixed; an item whose members do not scan is decoded instead.
func (l *listing) addItem(server string, it json.RawMessage) *jsonrpc.Error {
	ms, ok := jsonrpc.Members(it)
	if !ok {
		return l.addDecoded(server, "["+string(it)+"]")
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
func (l *listing) addDecoded(server, itemsJSON string) *jsonrpc.Error {
	var arr []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(itemsJSON), &arr); err != nil {
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
	var opts *mcpdv1.CallOptions
	if b.opts.CallOptions != nil {
		opts = b.opts.CallOptions()
	}
	o := optionsOf(opts)
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
	if ds, ok := b.be.(DirectSender); ok {
		return ds.List(ctx, server, method, o)
	}
	return b.listFrom(ctx, method, server, callOptions(o))
}

// optionsOf is opts (nil: none) as the in-process service takes them.
func optionsOf(opts *mcpdv1.CallOptions) service.Options {
	o := service.Options{Timeout: time.Duration(opts.GetTimeoutMs()) * time.Millisecond,
		ClientCapabilities: json.RawMessage(opts.GetClientCapabilitiesJson())}
	if c := opts.GetClient(); c != nil {
		o.Client = service.Client{Name: c.GetName(), Version: c.GetVersion()}
	}
	return o
}

// callOptions is o as a gRPC request carries it.
func callOptions(o service.Options) *mcpdv1.CallOptions {
	opts := &mcpdv1.CallOptions{TimeoutMs: o.Timeout.Milliseconds(), ClientCapabilitiesJson: string(o.ClientCapabilities)}
	if o.Client != (service.Client{}) {
		opts.Client = &mcpdv1.ClientInfo{Name: o.Client.Name, Version: o.Client.Version}
	}
	return opts
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
// fragments), written as bytes: the items are not encoded again.
func listResult(r *hostReq, method string, items []json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	return itemsResult(r, jsonrpc.ListKeys[method], items)
}

// itemsResult is a one-page list result holding items under key (skills,
// tasks, tools…), written as bytes.
func itemsResult(r *hostReq, key string, items []json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	n := 128 // the key and the modern members
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
	}
	return append(out, '}'), nil
}

// listFrom sends the list RPC of the MCP method ("tools/list", …).
func (b *bridge) listFrom(ctx context.Context, method, server string, opts *mcpdv1.CallOptions) ([]service.ServerList, error) {
	var lists []*mcpdv1.ServerList
	var err error
	switch method {
	case "tools/list":
		var r *mcpdv1.ListToolsResponse
		r, err = b.be.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server, Options: opts})
		lists = r.GetServers()
	case "prompts/list":
		var r *mcpdv1.ListPromptsResponse
		r, err = b.be.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: server, Options: opts})
		lists = r.GetServers()
	case "resources/list":
		var r *mcpdv1.ListResourcesResponse
		r, err = b.be.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: server, Options: opts})
		lists = r.GetServers()
	case "resources/templates/list":
		var r *mcpdv1.ListResourceTemplatesResponse
		r, err = b.be.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: server, Options: opts})
		lists = r.GetServers()
	default:
		return nil, fmt.Errorf("no list rpc for %q", method)
	}
	return serverLists(lists), err
}

// serverLists are lists as the in-process service gives them; nil for
// none.
func serverLists(lists []*mcpdv1.ServerList) []service.ServerList {
	if lists == nil {
		return nil
	}
	out := make([]service.ServerList, len(lists))
	for i, e := range lists {
		out[i] = service.ServerList{Server: e.GetServer(), Items: stringView(e.GetItemsJson()), Unavailable: e.GetUnavailable()}
		if e.GetError() != nil {
			out[i].Error = mcpErr(e.GetError())
		}
	}
	return out
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
