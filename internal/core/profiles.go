package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// This file enforces the config's profiles. A call is made under a profile
// when its context names one (WithProfile; the gRPC door sets it from
// mcpdv1.MetadataProfile). Under a profile the MCP operations see only
// its servers (another is an unknown server), lists carry only the items
// it shows, with its overrides, and a request for a hidden tool, prompt or
// resource is answered as the server answers for one it does not have.
// Every door reaches the servers through these operations, so none can bypass
// the gate.

// Answers for hidden items, as MCP servers give them for unknown ones.
const (
	codeInvalidParams    = -32602
	codeResourceNotFound = -32002
)

// profileKey marks a context with the profile its call is made under.
type profileKey struct{}

// WithProfile returns ctx for calls under the named profile ("" none)
// (the gRPC door: mcpdv1.MetadataProfile).
func WithProfile(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, profileKey{}, name)
}

// SetProfiles installs the config's profiles (nil: none); calls made
// from now on are checked against them. When it replaces profiles (a
// reload), the subscription streams of a profile whose rules for a server
// changed are told that the server's lists changed, so their apps and
// hosts list again and see the new view.
func (s *Service) SetProfiles(set profile.Set) {
	old := s.profiles.Swap(&set)
	if old == nil {
		return
	}
	changes := profile.ListChanges(*old, set)
	if len(changes) == 0 {
		return
	}
	m, err := s.Subscriptions()
	if err != nil {
		return
	}
	for _, c := range changes {
		m.ProfileListsChanged(c.Profile, c.Server, c.Tools, c.Prompts, c.Resources)
	}
}

// ProfileChangesTo says what installing set would do to the installed
// profiles (a config check, or a reload before it installs them).
func (s *Service) ProfileChangesTo(set profile.Set) ProfileChanges {
	var c ProfileChanges
	c.Added, c.Removed, c.Changed = profile.Diff(s.profileSet(), set)
	return c
}

// profileSet is the installed profiles, nil for none.
func (s *Service) profileSet() profile.Set {
	if p := s.profiles.Load(); p != nil {
		return *p
	}
	return nil
}

// profileOf is the profile a call of ctx is made under, nil for none. A
// name that is no profile is NOT_FOUND. The app's connection records it
// for GetStatus.
func (s *Service) profileOf(ctx context.Context) (*profile.Profile, error) {
	name := profileName(ctx)
	if name == "" {
		return nil, nil
	}
	set := s.profileSet()
	p := set[name]
	if p == nil {
		msg := fmt.Sprintf("unknown profile %q", name)
		if len(set) == 0 {
			msg += ": the config has no profiles"
		} else {
			msg += fmt.Sprintf(" (profiles: %s)", quoteNames(set.Names()))
		}
		return nil, classError(service.UnknownProfile, map[string]string{service.MetaProfile: name}, msg)
	}
	if c := connFromContext(ctx); c != nil {
		c.setProfile(name)
	}
	return p, nil
}

// profileName is the name of the profile a call of ctx asks for
// (WithProfile); "" for none.
func profileName(ctx context.Context) string {
	name, _ := ctx.Value(profileKey{}).(string)
	return name
}

// gateServer returns p's rules for server: nil without a profile, and the
// supervisor's unknown-server error when p does not serve it.
func gateServer(p *profile.Profile, server string) (*profile.Server, error) {
	if p == nil {
		return nil, nil
	}
	if rs := p.Server(server); rs != nil {
		return rs, nil
	}
	// Said as for a server that is not configured: the profile's app
	// need not know of the others.
	return nil, classError(service.NotInProfile,
		map[string]string{service.MetaServer: server, service.MetaProfile: p.Name},
		(&supervisor.UnknownServerError{Name: server}).Error())
}

// profileGate is the profile and server rules of one call on a named
// server; rs is nil without a profile.
func (s *Service) profileGate(ctx context.Context, server string) (*profile.Server, error) {
	p, err := s.profileOf(ctx)
	if err != nil {
		return nil, err
	}
	return gateServer(p, server)
}

// hiddenItem reports whether rs hides what request method with params
// names (the tool of tools/call, the prompt of prompts/get, the resource
// of resources/read, the ref of completion/complete), and if so the
// answer a server gives for an item it does not have.
func hiddenItem(rs *profile.Server, method string, params json.RawMessage) *session.RPCError {
	if rs == nil {
		return nil
	}
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
		Ref  struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		_ = json.Unmarshal(params, &p) // params were checked to be an object
	default:
		return nil
	}
	switch method {
	case "tools/call":
		return hiddenName(&rs.Tools, "tool", p.Name)
	case "prompts/get":
		return hiddenName(&rs.Prompts, "prompt", p.Name)
	case "resources/read":
		return hiddenURI(&rs.Resources, p.URI)
	}
	switch p.Ref.Type {
	case "ref/prompt":
		return hiddenName(&rs.Prompts, "prompt", p.Ref.Name)
	case "ref/resource":
		return hiddenURI(&rs.Resources, p.Ref.URI)
	}
	return nil
}

func hiddenName(r *profile.Rules, kind, name string) *session.RPCError {
	if r.Allows(name) {
		return nil
	}
	// "Unknown tool: invalid_tool_name" is the spec's own example.
	return &session.RPCError{Code: codeInvalidParams, Message: fmt.Sprintf("Unknown %s: %s", kind, name)}
}

func hiddenURI(r *profile.Rules, uri string) *session.RPCError {
	if r.Allows(uri) {
		return nil
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &session.RPCError{Code: codeResourceNotFound, Message: "Resource not found", Data: data}
}

// filterListResult applies rs to the result of a list method sent through
// SendRequest; other results are returned as they are.
func filterListResult(rs *profile.Server, method string, resp *session.Response) (*session.Response, error) {
	if rs == nil || resp == nil || resp.Error != nil || !profile.IsList(method) {
		return resp, nil
	}
	res, err := rs.FilterResult(method, resp.Result)
	if err != nil {
		return nil, codeError(service.Internal, "apply profile: %v", err)
	}
	return &session.Response{Result: res}, nil // the cached response stays as it was
}

// profileServers restricts names to those p serves (all without p).
func profileServers(p *profile.Profile, names []string) []string {
	if p == nil {
		return names
	}
	out := names[:0:0]
	for _, n := range names {
		if p.Server(n) != nil {
			out = append(out, n)
		}
	}
	return out
}

// profileList lists the installed profiles for the status.
func (s *Service) profileList() []service.Profile {
	set := s.profileSet()
	out := make([]service.Profile, 0, len(set))
	for _, n := range set.Names() {
		p := set[n]
		out = append(out, service.Profile{Name: p.Name, Prefix: string(p.Prefix), Servers: p.ServerNames()})
	}
	return out
}

// uriHiddenEverywhere reports whether every server of p hides uri.
func uriHiddenEverywhere(p *profile.Profile, uris []string) (string, bool) {
	if p == nil {
		return "", false
	}
	for _, u := range uris {
		if subscriptions.IsTaskURI(u) {
			continue
		}
		if !slices.ContainsFunc(p.ServerNames(), func(n string) bool { return p.Server(n).Resources.Allows(u) }) {
			return u, true
		}
	}
	return "", false
}

// quoteNames is `"a", "b"`.
func quoteNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", n)
	}
	return out
}
