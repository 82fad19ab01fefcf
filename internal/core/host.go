package core

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// ServeChildRequest answers a request a child sent to mcpd (roots/list,
// sampling/createMessage, elicitation/create) by relaying it to an app
// registered through the Host RPC, or -32601 when none answers it. Pass it
// as supervisor.Options.OnRequest.
func (s *Service) ServeChildRequest(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
	return s.hosts.serve(ctx, server, method, params)
}

// registerHost checks a host's registration and registers the host for
// servers (nil: every server).
func (s *Service) registerHost(ctx context.Context, reg service.HostRegistration) (*host, []string, error) {
	if !reg.Roots && !reg.Sampling && !reg.Elicitation {
		return nil, nil, codeError(service.InvalidArgument, "a host must answer at least one of roots, sampling, elicitation")
	}
	p, err := s.profileOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	servers := reg.Servers
	if p != nil && len(servers) == 0 {
		servers = p.ServerNames() // a host under a profile answers only for its servers
	}
	for _, n := range servers {
		if _, err := gateServer(p, n); err != nil {
			return nil, nil, err
		}
	}
	known := s.sup.Names()
	for _, n := range reg.Servers {
		if !slices.Contains(known, n) {
			return nil, nil, ToError(&supervisor.UnknownServerError{Name: n})
		}
	}
	name, version := clientIdentityOf(ctx, reg.Client.Name, reg.Client.Version)
	var connID uint64
	sc := hostScope{root: cleanRoot(rootOf(ctx))}
	if c := connFromContext(ctx); c != nil {
		connID = c.id
		c.setClient(name, version)
		c.setHost()
		sc.app = c.identityOf(clientOf(ctx).Name, reg.Client.Name)
	}
	return s.hosts.registerFor(connID, name, sc, servers, hostCaps{
		roots: reg.Roots, sampling: reg.Sampling, elicitation: reg.Elicitation,
		elicitationURL: reg.ElicitationURL,
	}), servers, nil
}

// hostAnswerFrom is a host's result or error, as the waiting call takes
// it: a result that is no JSON object is the host's internal error.
func hostAnswerFrom(result json.RawMessage, rerr *jsonrpc.Error) hostAnswer {
	if rerr != nil {
		return hostAnswer{err: &session.RPCError{Code: rerr.Code, Message: rerr.Message, Data: rerr.Data}}
	}
	res, err := JSONObject("result_json", result)
	if err != nil {
		return hostAnswer{err: &session.RPCError{Code: jsonrpc.CodeInternalError, Message: "the host's answer is not a JSON object"}}
	}
	if res == nil {
		res = json.RawMessage("{}")
	}
	return hostAnswer{result: res}
}

// InFlight records a call of ctx's app on server as in flight, so that
// the server's requests prefer the app as host, until the returned func
// is called. Every door's calls are tracked through it.
func (s *Service) InFlight(ctx context.Context, server string) (end func()) {
	c := connFromContext(ctx)
	if c == nil {
		return func() {}
	}
	f := s.hosts.beginCall(server, c.id)
	return func() { s.hosts.endCall(f) }
}
