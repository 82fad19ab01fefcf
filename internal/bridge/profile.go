package bridge

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// A bridge serving a profile (Options.Profile) makes every call of mcpd
// under it: the profile travels in the context of each Backend call
// (WithProfile), as gRPC metadata over the socket (GRPCBackend) and as the
// context's profile in the daemon's own process (the HTTP face's backend).
// mcpd enforces it; the bridge only names what it is given (Options.Prefix).

type profileKey struct{}

// WithProfile returns ctx for Backend calls under the named profile.
func WithProfile(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, profileKey{}, name)
}

// ProfileFrom is the profile of a Backend call's context, "" for none.
func ProfileFrom(ctx context.Context) string {
	name, _ := ctx.Value(profileKey{}).(string)
	return name
}

// outgoing adds the profile and the root of ctx, if any, to its gRPC
// request metadata.
func outgoing(ctx context.Context) context.Context {
	return apiclient.Outgoing(ctx, apiclient.Metadata{Profile: ProfileFrom(ctx), Root: RootFrom(ctx)})
}

// profiledBackend makes every call of its Backend under one profile and
// in one workspace root, either of them "" for none.
type profiledBackend struct {
	Backend
	profile, root string
}

// profiledDirect is a profiledBackend over a DirectSender, which it
// stays.
type profiledDirect struct {
	*profiledBackend
	ds DirectSender
}

func (p profiledDirect) Send(ctx context.Context, req service.Request, onEvent func(service.Event)) (*service.Response, error) {
	return p.ds.Send(p.ctx(ctx), req, onEvent)
}

func (p profiledDirect) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	return p.ds.List(p.ctx(ctx), server, method, o)
}

func (p profiledDirect) Read(ctx context.Context, r service.Read) (*service.Response, error) {
	return p.ds.Read(p.ctx(ctx), r)
}

func (p profiledDirect) ServeHost(ctx context.Context, reg service.HostRegistration, registered func(), answer service.HostAnswerer, notify service.HostNotifier) error {
	return p.ds.ServeHost(p.ctx(ctx), reg, registered, answer, notify)
}

func (p profiledDirect) UpdateWatch(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error) {
	return p.ds.UpdateWatch(p.ctx(ctx), u)
}

// profiled is be making every call under profile and in root.
func profiled(be Backend, profile, root string) Backend {
	p := &profiledBackend{Backend: be, profile: profile, root: root}
	if ds, ok := be.(DirectSender); ok {
		return profiledDirect{profiledBackend: p, ds: ds}
	}
	return p
}

func (p *profiledBackend) ctx(ctx context.Context) context.Context {
	return WithRoot(WithProfile(ctx, p.profile), p.root)
}

func (p *profiledBackend) ListServers(ctx context.Context, in *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return p.Backend.ListServers(p.ctx(ctx), in)
}

func (p *profiledBackend) ListTools(ctx context.Context, in *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	return p.Backend.ListTools(p.ctx(ctx), in)
}

func (p *profiledBackend) ListPrompts(ctx context.Context, in *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	return p.Backend.ListPrompts(p.ctx(ctx), in)
}

func (p *profiledBackend) ListResources(ctx context.Context, in *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	return p.Backend.ListResources(p.ctx(ctx), in)
}

func (p *profiledBackend) ListResourceTemplates(ctx context.Context, in *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	return p.Backend.ListResourceTemplates(p.ctx(ctx), in)
}

func (p *profiledBackend) ReadResource(ctx context.Context, in *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	return p.Backend.ReadResource(p.ctx(ctx), in)
}

func (p *profiledBackend) UpdateSubscription(ctx context.Context, in *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	return p.Backend.UpdateSubscription(p.ctx(ctx), in)
}

func (p *profiledBackend) SendRequest(ctx context.Context, in *mcpdv1.SendRequestRequest) (RecvStream[mcpdv1.CallToolEvent], error) {
	return p.Backend.SendRequest(p.ctx(ctx), in)
}

func (p *profiledBackend) Subscribe(ctx context.Context, in *mcpdv1.SubscribeRequest) (RecvStream[mcpdv1.SubscriptionEvent], error) {
	return p.Backend.Subscribe(p.ctx(ctx), in)
}

func (p *profiledBackend) Host(ctx context.Context) (HostStream, error) {
	return p.Backend.Host(p.ctx(ctx))
}

// prefixMode is the naming of a bridge: the option's when set, else the
// profile's mcpd reported, else PrefixAlways.
func prefixMode(opt profile.Prefix, info *mcpdv1.ProfileInfo) profile.Prefix {
	if opt != "" {
		return opt
	}
	if p, ok := profile.ParsePrefix(info.GetPrefix()); ok {
		return p
	}
	return profile.PrefixAlways
}
