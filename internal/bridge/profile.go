package bridge

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// A bridge serving a profile (Options.Profile) makes every call of mcpd
// under it: the profile travels in the context of each Backend call
// (WithProfile), as gRPC metadata over the socket (internal/bridgegrpc) and as the
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

// profiledBackend makes every call of its Backend under one profile and
// in one workspace root, either of them "" for none.
type profiledBackend struct {
	Backend
	profile, root string
}

// profiled is be making every call under profile and in root.
func profiled(be Backend, profile, root string) Backend {
	return &profiledBackend{Backend: be, profile: profile, root: root}
}

func (p *profiledBackend) ctx(ctx context.Context) context.Context {
	return WithRoot(WithProfile(ctx, p.profile), p.root)
}

func (p *profiledBackend) ListServers(ctx context.Context) (*service.Servers, error) {
	return p.Backend.ListServers(p.ctx(ctx))
}

func (p *profiledBackend) Send(ctx context.Context, req service.Request, onEvent func(service.Event)) (*service.Response, error) {
	return p.Backend.Send(p.ctx(ctx), req, onEvent)
}

func (p *profiledBackend) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	return p.Backend.List(p.ctx(ctx), server, method, o)
}

func (p *profiledBackend) Read(ctx context.Context, r service.Read) (*service.Response, error) {
	return p.Backend.Read(p.ctx(ctx), r)
}

func (p *profiledBackend) ServeHost(ctx context.Context, reg service.HostRegistration, registered func(), answer service.HostAnswerer, notify service.HostNotifier) error {
	return p.Backend.ServeHost(p.ctx(ctx), reg, registered, answer, notify)
}

func (p *profiledBackend) Watch(ctx context.Context, w service.Watch, send func(service.SubscriptionEvent) error) error {
	return p.Backend.Watch(p.ctx(ctx), w, send)
}

func (p *profiledBackend) UpdateWatch(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error) {
	return p.Backend.UpdateWatch(p.ctx(ctx), u)
}

// prefixMode is the naming of a bridge: the option's when set, else the
// profile's mcpd reported, else PrefixAlways.
func prefixMode(opt profile.Prefix, info *service.Profile) profile.Prefix {
	if opt != "" {
		return opt
	}
	if info == nil {
		return profile.PrefixAlways
	}
	if p, ok := profile.ParsePrefix(info.Prefix); ok {
		return p
	}
	return profile.PrefixAlways
}
