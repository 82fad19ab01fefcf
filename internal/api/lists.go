package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// ListTools lists the tools of one server, or of every enabled server.
func (s *Server) ListTools(ctx context.Context, req *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), methodToolsList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListToolsResponse{Servers: lists}, nil
}

// ListPrompts lists the prompts of one server, or of every enabled server.
func (s *Server) ListPrompts(ctx context.Context, req *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), methodPromptsList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListPromptsResponse{Servers: lists}, nil
}

// ListResources lists the resources of one server, or of every enabled server.
func (s *Server) ListResources(ctx context.Context, req *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), methodResourcesList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListResourcesResponse{Servers: lists}, nil
}

// ListResourceTemplates lists the resource templates of one server, or of
// every enabled server.
func (s *Server) ListResourceTemplates(ctx context.Context, req *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), methodResourceTemplatesList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListResourceTemplatesResponse{Servers: lists}, nil
}

// listProto is list for a gRPC app.
func (s *Server) listProto(ctx context.Context, server, method string, opts *mcpdv1.CallOptions) ([]*mcpdv1.ServerList, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	lists, err := s.list(ctx, server, method, o)
	if err != nil {
		return nil, err
	}
	out := make([]*mcpdv1.ServerList, len(lists))
	for i, l := range lists {
		e := &mcpdv1.ServerList{Server: l.Server, ItemsJson: resultString(l.Items), Unavailable: l.Unavailable}
		if l.Error != nil {
			e.Error = &mcpdv1.McpError{Code: l.Error.Code, Message: l.Error.Message, DataJson: string(l.Error.Data)}
		}
		if l.Unavailable == "" {
			e.Cache = cacheStatusOf(l.Cache)
		}
		out[i] = e
	}
	return out, nil
}

// cacheStatusOf is src as mcpd.v1 names it.
func cacheStatusOf(src service.Source) mcpdv1.CacheStatus {
	switch src {
	case service.Hit:
		return mcpdv1.CacheStatus_CACHE_STATUS_HIT
	case service.Coalesced:
		return mcpdv1.CacheStatus_CACHE_STATUS_COALESCED
	}
	return mcpdv1.CacheStatus_CACHE_STATUS_FETCHED
}

// list runs one list method on the named server or, when server is empty,
// on every enabled server in parallel. In the aggregate form a server's
// failure is reported in its ServerList entry and never fails the call; a
// named server's JSON-RPC error is reported the same way, its other errors
// become the call's status.
func (s *Server) list(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	base, copts, err := s.settings(ctx, o)
	if err != nil {
		return nil, err
	}
	base.Method = method
	prof, err := s.profileOf(ctx)
	if err != nil {
		return nil, err
	}
	if server != "" {
		rs, err := gateServer(prof, server)
		if err != nil {
			return nil, err
		}
		items, src, err := s.listCached(ctx, server, method, base, copts)
		items, err = filterItems(rs, method, items, err)
		entry := service.ServerList{Server: server}
		if err := fillList(&entry, items, src, err); err != nil {
			return nil, toError(err)
		}
		return []service.ServerList{entry}, nil
	}

	var names []string
	for _, st := range s.sup.Status() {
		if !st.Disabled {
			names = append(names, st.Name)
		}
	}
	names = profileServers(prof, names)
	entries := make([]service.ServerList, len(names))
	removed := make([]bool, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			r := *base // each call gets its own copy of the request
			items, src, err := s.listCached(ctx, name, method, &r, copts)
			if prof != nil {
				items, err = filterItems(prof.Server(name), method, items, err)
			}
			entry := service.ServerList{Server: name}
			if err := fillList(&entry, items, src, err); err != nil {
				if errors.Is(err, supervisor.ErrUnknownServer) {
					removed[i] = true // removed by a reload meanwhile
					return
				}
				entry.Unavailable = unavailableReason(name, err)
			}
			entries[i] = entry
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, toError(err)
	}
	out := entries[:0]
	for i, e := range entries {
		if !removed[i] {
			out = append(out, e)
		}
	}
	return out, nil
}

// fillList puts a List outcome into entry. It returns err back unless err
// is a JSON-RPC error of the child, which belongs in entry.Error.
func fillList(entry *service.ServerList, items json.RawMessage, src cache.Source, err error) error {
	if err != nil {
		var rpcErr *session.RPCError
		if errors.As(err, &rpcErr) {
			entry.Error = rpcErrorOf(rpcErr)
			entry.Cache = serviceSource(src) // errors are never cached: fetched or coalesced
			return nil
		}
		return err
	}
	entry.Items = items
	entry.Cache = serviceSource(src)
	return nil
}

// unavailableReason is why server could not be listed, naming it once:
// err's message as is when err is classed as about server (its message
// names it: classOf's MetaServer, as bridge.RPCError reads it), else after
// the server's name.
func unavailableReason(server string, err error) string {
	if _, md := classOf(err); md[service.MetaServer] == server {
		return err.Error()
	}
	return fmt.Sprintf("server %q is unavailable: %v", server, err)
}
