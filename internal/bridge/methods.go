package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// maxToolName is the MCP limit on tool names ("Tool names: 1–128 chars").
const maxToolName = 128

// prefixSep separates the server from the name in aggregated names; config
// never allows it in a server name.
const prefixSep = "__"

func (b *bridge) handle(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	if r.bad != nil {
		return nil, r.bad
	}
	if r.modern && !slices.Contains(jsonrpc.ModernVersions(), r.version) {
		// "-32022 UnsupportedProtocolVersion — any request whose version
		// the server does not implement".
		// Its data lists what a request's _meta may name: a client
		// "should retry with a mutually supported version from
		// data.supported". A legacy version is served through initialize.
		e := jsonrpc.UnsupportedVersion(r.version, jsonrpc.ModernVersions())
		if slices.Contains(jsonrpc.SupportedVersions(), r.version) {
			e.Message = fmt.Sprintf("unsupported protocol version: %s is not a per-request version; a %s client opens a session with initialize", r.version, r.version)
		}
		return nil, e
	}
	if err := removedInModern(r); err != nil {
		return nil, err
	}
	if r.modern {
		// A modern host declares per request what it answers; the bridge
		// registers with mcpd as host for what it ever declared.
		b.declare(r.caps)
		// Every list made for this request (the host's list, a lookup of
		// a name or URI) goes to the servers with its declaration.
		ctx = withListCaps(ctx, r.caps)
	}
	switch r.method {
	case "initialize":
		return b.initialize(ctx, r)
	case "ping":
		return json.RawMessage("{}"), nil
	case "server/discover":
		return b.discover(ctx)
	case "subscriptions/listen":
		return b.listen(ctx, r)
	case "resources/subscribe", "resources/unsubscribe":
		// Kept while mcpd is down, like a listen's URIs: the Subscribe
		// stream opens with them once mcpd is there.
		return b.legacySubscribe(ctx, r)
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		if err := checkCursor(r); err != nil {
			return nil, err
		}
	}
	// Everything else needs mcpd.
	if err := b.waitUp(ctx); err != nil {
		return nil, err
	}
	switch r.method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		items, notes, err := b.listNoted(ctx, r.method, false)
		if err != nil {
			return nil, err
		}
		b.warnRequest(r, notes)
		return b.listResult(r, r.method, items)
	case "tools/call", "prompts/get":
		return b.routedCall(ctx, r)
	case "resources/read":
		return b.read(ctx, r)
	case "completion/complete":
		return b.complete(ctx, r)
	case "logging/setLevel":
		return b.setLevel(ctx, r)
	}
	if !b.aggr {
		res, err := b.forward(ctx, r, b.serverNames()[0], r.method, r.params)
		if err == nil && r.method == "tasks/list" {
			b.noteTaskList(b.serverNames()[0], res) // taskstatus.go
		}
		return extCacheHints(r, res), err
	}
	if res, err, ok := b.extension(ctx, r); ok {
		return extCacheHints(r, res), err
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q not found", r.method)
}

// ---- lifecycle ----

// initialize answers the legacy handshake: "If the server supports the
// requested version it echoes it; otherwise it answers with another
// version it supports (preferably its latest)."
func (b *bridge) initialize(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if r.params != nil {
		raw, _ := json.Marshal(r.params)
		_ = json.Unmarshal(raw, &p)
	}
	if err := initializeParamsError(r); err != nil {
		return nil, err
	}
	v := jsonrpc.LegacyVersion
	if slices.Contains(jsonrpc.LegacyVersions(), p.ProtocolVersion) {
		v = p.ProtocolVersion
	}
	b.refreshInfo(ctx)
	b.mu.Lock()
	b.initialized = true
	b.hostCaps = p.Capabilities
	b.hostInfo = p.ClientInfo
	b.upst.degraded = b.upst.degraded || !b.isUp()
	b.mu.Unlock()
	b.declare(p.Capabilities)
	res := map[string]any{
		"protocolVersion": v,
		"capabilities":    b.capabilities(),
		"serverInfo":      b.serverInfo(),
	}
	if ins := b.instructions(); ins != "" {
		res["instructions"] = ins
	}
	return marshalResult(res)
}

// initializeParamsError is the error for an initialize without the
// protocol version it asks for, else nil.
func initializeParamsError(r *hostReq) *jsonrpc.Error {
	if v, ok := jsonrpc.PlainText(r.params["protocolVersion"]); !ok || v == "" {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "initialize: params.protocolVersion required (a string such as %q)", jsonrpc.LegacyVersion)
	}
	return nil
}

// discover answers server/discover (modern).
func (b *bridge) discover(ctx context.Context) (json.RawMessage, *jsonrpc.Error) {
	b.refreshInfo(ctx)
	b.mu.Lock()
	b.upst.degraded = b.upst.degraded || !b.isUp()
	b.mu.Unlock()
	res := map[string]any{
		"resultType":        "complete",
		"supportedVersions": jsonrpc.SupportedVersions(),
		"capabilities":      b.capabilities(),
		"_meta":             map[string]any{jsonrpc.MetaServerInfo: b.serverInfo()},
		"ttlMs":             0,
		"cacheScope":        "private",
	}
	if ins := b.instructions(); ins != "" {
		res["instructions"] = ins
	}
	return marshalResult(res)
}

// refreshInfo describes servers not described yet that are ready now, in
// refreshWait at most; one that is still not ready is described once it is
// (serverState), and the host told then.
func (b *bridge) refreshInfo(ctx context.Context) {
	if !b.isUp() {
		return
	}
	b.mu.Lock()
	missing := len(b.info) < len(b.serverNames())
	b.mu.Unlock()
	if !missing {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, refreshWait)
	defer cancel()
	if b.ready(ctx) == nil {
		_ = b.describe(ctx, false)
	}
}

// refreshWait bounds refreshInfo.
const refreshWait = 2 * time.Second

func marshalResult(v any) (json.RawMessage, *jsonrpc.Error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "encode result: %v", err)
	}
	return data, nil
}

// serverInfo is the child's Implementation for one server, the bridge's
// own when serving several.
func (b *bridge) serverInfo() json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.aggr && len(b.serverNames()) > 0 {
		if s := b.info[b.serverNames()[0]]; s != nil && json.Valid(s.ServerInfo) && len(s.ServerInfo) > 0 {
			return s.ServerInfo
		}
	}
	return b.ownInfo
}

func (b *bridge) instructions() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.serverNames()) == 0 {
		return ""
	}
	if !b.aggr {
		if s := b.info[b.serverNames()[0]]; s != nil {
			return s.Instructions
		}
		return ""
	}
	var parts []string
	for _, n := range b.serverNames() {
		if s := b.info[n]; s != nil && s.Instructions != "" {
			if b.prefix == profile.PrefixOnCollision {
				parts = append(parts, fmt.Sprintf("## %s (a tool or prompt name another server shares is prefixed %s%s)\n\n%s", n, n, prefixSep, s.Instructions))
				continue
			}
			parts = append(parts, fmt.Sprintf("## %s (tools and prompts prefixed %s%s)\n\n%s", n, n, prefixSep, s.Instructions))
		}
	}
	return strings.Join(parts, "\n\n")
}

// ---- calls ----

// resolve finds the server and original name of an exposed tool or prompt.
func (b *bridge) resolve(ctx context.Context, kind, exposed string) (route, bool) {
	if !b.aggr {
		return route{server: b.serverNames()[0], name: exposed}, true
	}
	b.mu.Lock()
	r, ok := b.routes[kind+"\x00"+exposed]
	b.mu.Unlock()
	if ok {
		return r, true
	}
	if server, name, found := strings.Cut(exposed, prefixSep); found && b.prefixMode() != profile.PrefixOnCollision &&
		slices.Contains(b.serverNames(), server) && len(exposed) < maxToolName {
		return route{server: server, name: name}, true
	}
	// A shortened name not listed yet: list, then look again.
	if err := b.listAll(ctx, kind+"/list"); err == nil {
		b.mu.Lock()
		r, ok = b.routes[kind+"\x00"+exposed]
		b.mu.Unlock()
	}
	return r, ok
}

func (b *bridge) routedCall(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	if oc := b.takeParked(r); oc != nil {
		res, err := b.resume(ctx, r, oc)
		if err == nil && r.method == "tools/call" {
			b.noteTask(oc.server, res)
		}
		return res, err
	}
	name, ok := jsonrpc.PlainText(r.params["name"])
	if !ok {
		if err := json.Unmarshal(r.params["name"], &name); err != nil {
			name = ""
		}
	}
	if name == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.name required")
	}
	if args, ok := r.params["arguments"]; ok && !objectOrNull(args) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.arguments must be an object, not %s", briefJSON(args))
	}
	kind := "tools"
	if r.method == "prompts/get" {
		kind = "prompts"
	}
	rt, ok := b.resolve(ctx, kind, name)
	if !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown %s %q", strings.TrimSuffix(kind, "s"), name)
	}
	if rt.name == name {
		res, err := b.forward(ctx, r, rt.server, r.method, r.params) // as the host sent them
		if err == nil && kind == "tools" {
			b.noteTask(rt.server, res)
		}
		return res, err
	}
	params := cloneParams(r.params)
	params["name"], _ = json.Marshal(rt.name)
	res, err := b.forward(ctx, r, rt.server, r.method, params)
	if err == nil && kind == "tools" {
		b.noteTask(rt.server, res)
	}
	if err != nil && err.Code == jsonrpc.CodeInvalidParams {
		// The server's own words about the name (`unknown tool "x"`) name
		// it as the host does.
		e := *err
		e.Message = strings.ReplaceAll(e.Message, strconv.Quote(rt.name), strconv.Quote(name))
		err = &e
	}
	return res, err
}

// objectOrNull reports whether raw is a JSON object or null.
func objectOrNull(raw json.RawMessage) bool {
	i := jsonrpc.SkipSpace(raw, 0)
	return i < len(raw) && (raw[i] == '{' || string(bytes.TrimSpace(raw[i:])) == "null")
}

// briefJSON is raw for an error message, cut at 40 bytes.
func briefJSON(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func cloneParams(p map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(p)+2)
	for k, v := range p {
		out[k] = v
	}
	return out
}

// serviceOptions are options as the in-process service takes them.
func (b *bridge) serviceOptions(r *hostReq) service.Options {
	o := service.Options{Timeout: b.timeout}
	b.mu.Lock()
	info, caps := b.hostInfo, b.hostCaps
	b.mu.Unlock()
	if r.modern {
		info, caps = r.info, r.caps
	}
	if c := b.client(info); c != nil {
		o.Client = *c
	}
	if len(caps) > 0 && caps[0] == '{' {
		o.ClientCapabilities = caps
	}
	return o
}

// forward sends one request to server through mcpd's SendRequest, relaying
// its progress and log notifications to the host, and fulfils
// input_required results for a legacy host.
func (b *bridge) forward(ctx context.Context, r *hostReq, server, method string, params map[string]json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	req := *r
	req.params = cloneParams(params)
	b.stampLogLevel(&req)
	if !sameMap(params, r.params) || !sameMap(req.meta, r.meta) {
		req.members = nil // changed: forwarded from the maps
	}
	if b.mrtr(&req) {
		// A legacy child's requests during the call reach a modern host as
		// input_required (mrtr.go).
		p, err := req.forwardParams()
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "encode params: %v", err)
		}
		return b.awaitOpen(ctx, r, server, func(uctx context.Context) (json.RawMessage, *jsonrpc.Error) {
			return b.send(uctx, &req, server, method, p)
		})
	}
	defer b.calling(ctx, server)()
	for round := 0; ; round++ {
		p, err := req.forwardParams()
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "encode params: %v", err)
		}
		res, rerr := b.send(ctx, &req, server, method, p)
		if rerr != nil {
			return nil, rerr
		}
		res, again, rerr := b.fulfil(ctx, r, res, req.params, round)
		if !again {
			return res, rerr
		}
		req.members = nil // fulfil changed the params
	}
}

// sameMap reports whether a and b are one map (not merely equal ones).
func sameMap(a, b map[string]json.RawMessage) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func (b *bridge) send(ctx context.Context, r *hostReq, server, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	if err := b.ready(ctx); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", err.Error())
	}
	ctx = withAlsoHeld(ctx, r.alsoHeld(params))
	// params are a view, not a copy: they may be tens of MiB, and nothing
	// writes to them (forwardParams made them, or they are the host's
	// message, which is never reused).
	req := service.Request{Server: server, Method: method, Params: params, Options: b.serviceOptions(r)}
	resp, err := b.be.Send(ctx, req, func(ev service.Event) {
		m := "notifications/progress"
		if ev.Kind == service.Message {
			m = "notifications/message"
		}
		b.writeCallOutput(ctx, &jsonrpc.Message{Method: m, Params: ev.Params})
	})
	switch {
	case err != nil:
		return b.callFailed(ctx, r, server, method, err)
	case resp == nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "mcpd ended the call without a response")
	case resp.Error != nil:
		return nil, resp.Error
	}
	return b.result(r, resp.Result), nil
}

// result is a server's result as the host sees it.
func (b *bridge) result(r *hostReq, res json.RawMessage) json.RawMessage {
	if r.modern {
		res = withResultType(res)
	}
	return res
}

// capabilityKeys are the client capabilities that answer each request a
// server may send its client.
var capabilityKeys = map[string]string{"roots/list": "roots", "sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
