package core

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
)

// List runs one List method on the named server or, when server is empty,
// on every enabled server in parallel. In the aggregate form a server's
// failure is reported in its ServerList entry and never fails the call; a
// named server's JSON-RPC error is reported the same way, its other errors
// become the call's status.
func (s *Service) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
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
			return nil, ToError(err)
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
		return nil, ToError(err)
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
