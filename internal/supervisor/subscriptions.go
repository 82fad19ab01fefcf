package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// This file wires the subscription manager (internal/subscriptions) into the
// supervisor:
//
//   - the manager reaches the live child of a server through subsSource
//     (Acquire: a pending acquire counts as demand, so a server with open
//     subscriptions is started lazily and restarted after an unexpected
//     exit without any app request);
//   - every lifecycle event goes to Manager.OnState (emit), every child
//     notification not tied to a request to Manager.OnNotification
//     (start.go), after the cache observed it;
//   - notifications delivered on a listen are observed by the cache
//     (ObserveNotification) before any app hears of them, and the upstream
//     acknowledgements become cache promises (SetCachePromises).
//
// Every unexpected exit counts toward the crash-loop bound, so a process
// that exits within 5 s after its subscriptions were re-sent to it does too;
// once the server is in crashloop, OnState ends the streams that need it
// with an error naming the server and the reason.

// Subscriptions returns the supervisor's subscription manager.
func (s *Supervisor) Subscriptions() *subscriptions.Manager { return s.subs }

func newSubscriptions(s *Supervisor) *subscriptions.Manager {
	return subscriptions.New(subscriptions.Options{
		Source:      subsSource{s},
		Logger:      s.opts.Logger,
		QueueEvents: s.opts.SubscriptionQueueEvents,
		QueueBytes:  s.opts.SubscriptionQueueBytes,
		Observe: func(t subscriptions.Target, method string, params json.RawMessage) {
			if sv, err := s.targetServer(t); err == nil {
				sv.observeNotification(session.Notification{Method: method, Params: params})
			}
		},
		OnDemand: s.onSubsDemand, // idle.go
		OnFanOut: s.fanOut,
		// mcpd's own listen for the list kinds (ownlisten.go).
		CacheListens: !s.opts.NoCacheListens,
		OnPromises: func(t subscriptions.Target, pid int, a subscriptions.ServerAck) {
			if sv, err := s.targetServer(t); err == nil {
				sv.setCachePromises(pid, cache.Promises{
					Tools: a.ToolsListChanged, Prompts: a.PromptsListChanged, Resources: a.ResourcesListChanged,
					URIs: a.URIs,
				})
			}
		},
	})
}

// subsOnEvent hands a lifecycle event to the subscription manager.
func (s *Supervisor) subsOnEvent(ev Event) {
	s.subs.OnState(subscriptions.StateEvent{
		Server: ev.Server, Instance: ev.Instance, State: string(ev.Kind), Pid: ev.Pid, Exit: ev.Exit, Error: ev.Error, Time: ev.Time,
	})
}

// subsSource is the supervisor as the subscription manager sees it.
type subsSource struct{ s *Supervisor }

// Acquire returns the ready child of server, starting it if needed.
func (src subsSource) Acquire(ctx context.Context, name string) (subscriptions.Child, error) {
	sv, err := src.s.lookup(name)
	if err != nil {
		return nil, err
	}
	if src.s.shuttingDown() {
		return nil, errShuttingDown
	}
	c, err := sv.readyChild(ctx)
	if err != nil {
		return nil, err
	}
	return &subsChild{sv: sv, c: c}, nil
}

// Shared reports whether any server runs instances.
func (src subsSource) Shared() bool { return src.s.Shared() }

// Instance returns the key of the instance of the named server that scope
// (a Scope) picks, "" for a server that is not shared.
func (src subsSource) Instance(name string, scope any) (string, error) {
	sv, err := src.s.lookup(name)
	if err != nil || !sv.sharedBase() {
		return "", nil
	}
	sc, _ := scope.(Scope)
	return instanceKeyOf(sv.currentSpec(), sc)
}

// AcquireInstance returns the ready child of the instance key of the named
// server, creating and starting it for scope (which owns it).
func (src subsSource) AcquireInstance(ctx context.Context, name, key string, scope any) (subscriptions.Child, error) {
	base, err := src.s.lookup(name)
	if err != nil {
		return nil, err
	}
	if !base.sharedBase() {
		return nil, serverUnavailable(name, " no longer runs instances")
	}
	sc, _ := scope.(Scope)
	sv, err := src.s.instanceFor(WithScope(ctx, sc), base)
	if err != nil {
		return nil, err
	}
	if sv.inst.key != key {
		return nil, serverUnavailable(name, ": the subscription's instance %q is now %q", key, sv.inst.key)
	}
	c, err := sv.readyChild(ctx)
	if err != nil {
		return nil, err
	}
	return &subsChild{sv: sv, c: c}, nil
}

// targetServer is the server (or instance) a subscription target names.
func (s *Supervisor) targetServer(t subscriptions.Target) (*server, error) {
	return s.eventServer(Event{Server: t.Server, Instance: t.Instance})
}

// subsDemand reports whether an app stream wants anything from sv's
// child (an instance's own).
func (sv *server) subsDemand() bool {
	return sv.sup.subs.HasDemandOn(subscriptions.Target{Server: sv.spec.Name, Instance: sv.instanceKey()})
}

// Names lists the enabled servers.
func (src subsSource) Names() []string {
	var out []string
	for _, st := range src.s.Status() {
		if !st.Disabled {
			out = append(out, st.Name)
		}
	}
	return out
}

// subsChild is one ready child as the subscription manager sees it.
type subsChild struct {
	sv *server
	c  *child
}

func (sc *subsChild) Pid() int                      { return sc.c.pid }
func (sc *subsChild) Modern() bool                  { return sc.c.info.Era == session.EraModern }
func (sc *subsChild) Capabilities() json.RawMessage { return sc.c.info.Capabilities }
func (sc *subsChild) Done() <-chan struct{}         { return sc.c.sess.Done() }

func (sc *subsChild) Call(ctx context.Context, method string, params json.RawMessage) error {
	resp, err := sc.c.sess.Call(ctx, &session.Request{Method: method, Params: params})
	if err != nil {
		if errors.Is(err, session.ErrClosed) || sc.c.ctx.Err() != nil {
			// Exited, or being stopped: nothing more reaches it.
			err = fmt.Errorf("%w: %w", subscriptions.ErrChildGone, err)
		}
		return fmt.Errorf("server %q: %s: %w", sc.sv.spec.Name, method, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("server %q: %s: %w", sc.sv.spec.Name, method, resp.Error)
	}
	return nil
}

func (sc *subsChild) Listen(ctx context.Context, filter json.RawMessage, onNotify func(method string, params json.RawMessage)) (subscriptions.Listener, error) {
	l, err := sc.c.sess.Listen(ctx, filter, func(n session.Notification) { onNotify(n.Method, n.Params) })
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", sc.sv.spec.Name, err)
	}
	return l, nil
}

// subsOnApply tells the subscription manager what a reload changed: streams
// watching every server pick up the added servers, streams lose the removed
// ones (with an event saying so), and the upstreams of changed servers are
// woken (a server enabled again, or whose new command may start now). A
// server whose process identity changed needs nothing more: the manager
// sees its child go and re-sends every subscription to the new one.
func (s *Supervisor) subsOnApply(res ApplyResult) {
	for _, name := range res.Removed {
		s.subs.ServerRemoved(name, fmt.Sprintf("server %q was removed from the config", name))
	}
	for _, name := range res.Added {
		s.subs.ServerAdded(name)
	}
	for _, name := range slices.Concat(res.Restarted, res.Updated) {
		s.subs.ServerChanged(name)
	}
}
