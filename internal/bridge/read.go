// A host's resources/read and completion/complete: routed to the server
// that owns the URI or reference.

package bridge

import (
	"context"
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// read serves resources/read through mcpd's ReadResource (cached), on the
// server that listed the URI, else on each server in turn.
func (b *bridge) read(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	if oc := b.takeParked(r); oc != nil {
		return b.resume(ctx, r, oc)
	}
	var uri string
	if err := json.Unmarshal(r.params["uri"], &uri); err != nil || uri == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.uri required")
	}
	first, known := b.uriOwner(uri)
	if !known && b.aggr {
		first, known = b.skillOwner(uri)
	}
	if !known && b.aggr {
		// Not listed yet: list, so that the read goes to the server that
		// lists the URI rather than to the first that answers it; a skill's
		// file is listed by skills/list, not always by resources/list.
		if err := b.listAll(ctx, "resources/list"); err == nil {
			first, known = b.uriOwner(uri)
		}
		if !known {
			first, known = b.learnSkills(ctx, r, uri)
		}
	}
	servers := b.serverNames() // a URI no server lists (a template's): each in turn
	if known {
		servers = []string{first}
	}
	var last *jsonrpc.Error
	for _, n := range servers {
		res, err := b.readOne(ctx, r, n, uri)
		if err == nil {
			return res, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// uriOwner is the server that listed uri first, if any did.
func (b *bridge) uriOwner(uri string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.uris[uri]
	return s, ok
}

func (b *bridge) readOne(ctx context.Context, r *hostReq, server, uri string) (json.RawMessage, *jsonrpc.Error) {
	if b.mrtr(r) {
		// A legacy child's requests during the read reach a modern host as
		// input_required (mrtr.go).
		return b.awaitOpen(ctx, r, server, func(uctx context.Context) (json.RawMessage, *jsonrpc.Error) {
			return b.readOnce(uctx, r, server, uri, r.params)
		})
	}
	params := cloneParams(r.params)
	for round := 0; ; round++ {
		res, rerr := b.readOnce(ctx, r, server, uri, params)
		if rerr != nil {
			return nil, rerr
		}
		res, again, rerr := b.fulfil(ctx, r, res, params, round)
		if !again {
			return res, rerr
		}
	}
}

// readOnce is one ReadResource through mcpd.
func (b *bridge) readOnce(ctx context.Context, r *hostReq, server, uri string, params map[string]json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var state string
	_ = json.Unmarshal(params["requestState"], &state)
	if err := b.ready(ctx); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", err.Error())
	}
	resp, err := b.be.Read(ctx, service.Read{Server: server, URI: uri, Options: b.serviceOptions(r),
		InputResponses: params["inputResponses"], RequestState: state})
	switch {
	case err != nil:
		return nil, b.rpcToMCP(ctx, err, server)
	case resp.Error != nil:
		return nil, resp.Error
	}
	res := resp.Result
	if r.modern {
		res = withCacheHints(withResultType(res))
	}
	return res, nil
}

// complete routes completion/complete by its ref.
func (b *bridge) complete(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	_ = json.Unmarshal(r.params["ref"], &ref)
	params := cloneParams(r.params)
	server := b.serverNames()[0]
	switch {
	case ref.Type == "ref/prompt" && b.aggr:
		rt, ok := b.resolve(ctx, "prompts", ref.Name)
		if !ok {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown prompt %q", ref.Name)
		}
		server = rt.server
		params["ref"], _ = json.Marshal(map[string]string{"type": ref.Type, "name": rt.name})
	case ref.Type == "ref/resource" && ref.URI == "":
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.ref.uri required")
	case ref.Type == "ref/resource" && b.aggr:
		s, err := b.resourceOwner(ctx, ref.URI)
		if err != nil {
			return nil, err
		}
		server = s
	}
	return b.forward(ctx, r, server, r.method, params)
}

// resourceOwner finds the server that has the resource template (or
// resource) uri. A host may complete a template it has not listed through
// this bridge (it kept the templates from an earlier session), so a URI
// not seen in a listing yet is looked up in the servers' template lists,
// then their resource lists, which mcpd caches.
func (b *bridge) resourceOwner(ctx context.Context, uri string) (string, *jsonrpc.Error) {
	lookup := func() (string, bool) { return b.uriOwner(uri) }
	if s, ok := lookup(); ok {
		return s, nil
	}
	for _, method := range []string{"resources/templates/list", "resources/list"} {
		if err := b.listAll(ctx, method); err != nil {
			return "", err
		}
		if s, ok := lookup(); ok {
			return s, nil
		}
	}
	return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "no server has the resource template %q", uri)
}
