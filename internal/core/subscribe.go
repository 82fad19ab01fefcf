package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// subscriber is implemented by a backend that serves subscriptions
// (*supervisor.Supervisor).
type subscriber interface {
	Subscriptions() *subscriptions.Manager
}

func (s *Service) Subscriptions() (*subscriptions.Manager, error) {
	sp, ok := s.sup.(subscriber)
	if !ok {
		return nil, codeError(service.Unimplemented, "subscriptions are not served by this daemon")
	}
	m := sp.Subscriptions()
	if m == nil {
		return nil, codeError(service.Unimplemented, "subscriptions are not served by this daemon")
	}
	return m, nil
}

// subscriptionAck is a subscription's acknowledgement: when it opened
// (events it waited for come after it), its id and its servers' acks.
type subscriptionAck struct {
	opened time.Time
	id     uint64
	acks   []subscriptions.ServerAck
}

// Subscribe serves a subscription of the app of ctx to what sw watches:
// it sends the acknowledgement with sendAck, then each event with send,
// as Subscribe says.
func (s *Service) Subscribe(ctx context.Context, sw service.Watch,
	sendAck func(service.SubscriptionEvent) error, send func(*subscriptions.Event) error) error {
	m, err := s.Subscriptions()
	if err != nil {
		return err
	}
	w, err := s.managerWatch(sw)
	if err != nil {
		return err
	}
	app, err := s.subscribingApp(ctx, sw, &w)
	if err != nil {
		return err
	}

	// The acknowledgement carries the time the stream opened: events it
	// waited for (a server becoming ready) come after it.
	opened := time.Now()
	st, acks, err := m.Subscribe(ctx, app, w)
	if err != nil {
		return subscribeStatus(err)
	}
	defer st.Close() // also when the app's connection drops without a word
	noteWatchUse(ctx, w)
	log := s.log.With(zap.Uint64("subscription_id", st.ID()), zap.String("app", app.Name))
	log.Debug("subscription opened", zap.Strings("servers", w.Servers))

	if err := sendAck(subscriptionAck{opened: opened, id: st.ID(), acks: acks}.toService()); err != nil {
		log.Debug("subscription ended by the app", zap.Error(err))
		return nil
	}
	return streamEvents(ctx, st, log, send)
}

// managerWatch is sw as the subscriptions manager takes it, checked: it must
// watch something, resource URIs need servers, and its servers must be
// known.
func (s *Service) managerWatch(sw service.Watch) (subscriptions.Watch, error) {
	w := subscriptions.Watch{
		Servers:              sw.Servers,
		ToolsListChanged:     sw.ToolsListChanged,
		PromptsListChanged:   sw.PromptsListChanged,
		ResourcesListChanged: sw.ResourcesListChanged,
		URIs:                 sw.URIs,
		State:                sw.State,
		Logs:                 sw.Logs,
		TaskStatus:           sw.TaskStatus,
	}
	if !w.ToolsListChanged && !w.PromptsListChanged && !w.ResourcesListChanged && len(w.URIs) == 0 && !w.State && !w.Logs && !w.TaskStatus {
		return w, codeError(service.InvalidArgument, "nothing to watch: ask for at least one kind of event or a resource URI")
	}
	if len(w.URIs) > 0 && len(w.Servers) == 0 {
		return w, codeError(service.InvalidArgument, "resource_uris need at least one server name")
	}
	known := s.sup.Names()
	for _, n := range w.Servers {
		if !slices.Contains(known, n) {
			return w, ToError(&supervisor.UnknownServerError{Name: n})
		}
	}
	return w, nil
}

// subscribingApp is the app of ctx as the subscriptions manager takes it:
// its profile (which may narrow w), its identity, its connection and the
// scope of the shared server instances it reaches.
func (s *Service) subscribingApp(ctx context.Context, sw service.Watch, w *subscriptions.Watch) (subscriptions.AppInfo, error) {
	prof, err := s.subscribeProfile(ctx, w)
	if err != nil {
		return subscriptions.AppInfo{}, err
	}
	app := subscriptions.AppInfo{Profile: prof}
	app.Name, app.Version = clientIdentityOf(ctx, sw.Client.Name, sw.Client.Version)
	if c := connFromContext(ctx); c != nil {
		app.Pid, app.Conn = c.pid, c.id
		c.setClient(app.Name, app.Version)
	}
	// The instances of shared servers it reaches: its calls' (instances.go).
	sc := s.scopeOf(ctx, sw.Client.Name)
	if sc.Root == "" && sc.HostRoot != nil && s.watchesRootServer(*w) {
		sc.Root = sc.HostRoot(ctx) // hostscope.go
	}
	sc.HostRoot = nil // the stream's root is fixed now
	app.Scope = sc
	return app, nil
}

// subscribeStatus is the status of the manager's refusal err to open a
// subscription.
func subscribeStatus(err error) error {
	if errors.Is(err, subscriptions.ErrInvalid) {
		return classError(service.InvalidRequest, nil, err.Error())
	}
	if class, md := classOf(err); class != "" {
		return classError(class, md, err.Error())
	}
	return classError(service.ServerUnavailable, nil, err.Error())
}

// streamEvents sends the events of st with send as they come, until the
// app cancels or a send fails (nil) or st ends (streamEnd).
func streamEvents(ctx context.Context, st *subscriptions.Stream, log *zap.Logger, send func(*subscriptions.Event) error) error {
	var evs []*subscriptions.Event // reused: the steady state allocates nothing here
	for {
		select {
		case <-ctx.Done():
			log.Debug("subscription cancelled by the app")
			return nil
		case <-st.Ready():
		}
		var end bool
		evs, end = st.Take(evs[:0])
		for _, ev := range evs {
			if err := send(ev); err != nil {
				log.Debug("subscription ended by the app", zap.Error(err))
				return nil
			}
		}
		if end {
			return streamEnd(st, evs[len(evs)-1], log)
		}
		if cap(evs) > maxKeptEvents {
			evs = nil // a burst's buffer is not kept for the whole stream
		} else {
			clear(evs) // the sent events need not live until the next ones
		}
	}
}

// streamEnd logs the end of st, whose last event is last, and returns
// what the handler returns: UNAVAILABLE after an error event, nil after
// the lagged one.
func streamEnd(st *subscriptions.Stream, last *subscriptions.Event, log *zap.Logger) error {
	if last.Kind == subscriptions.KindError {
		log.Info("subscription failed", zap.String("server", last.Server), zap.String("reason", last.Error))
		if last.ShuttingDown {
			return classError(service.ShuttingDown, nil, last.Error)
		}
		var md map[string]string
		if last.Server != "" {
			md = map[string]string{service.MetaServer: last.Server}
		}
		return classError(service.ServerUnavailable, md, last.Error)
	}
	stats := st.Stats()
	log.Warn("subscription lagged", zap.Uint64("coalesced", stats.Coalesced), zap.Uint64("dropped", stats.Dropped),
		zap.Uint64("dropped_log_messages", stats.LogsDropped))
	return nil
}

// maxKeptEvents is the capacity of a Subscribe handler's event buffer that
// is kept for the next events; a larger one, left by a burst, is released.
const maxKeptEvents = 64

// UpdateSubscription adds or removes resource URIs of an open stream,
// returning what each server now watches.
func (s *Service) UpdateSubscription(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error) {
	m, err := s.Subscriptions()
	if err != nil {
		return nil, err
	}
	if u.ID == 0 {
		return nil, codeError(service.InvalidArgument, "subscription_id required")
	}
	p, err := s.profileOf(ctx)
	if err != nil {
		return nil, err
	}
	if uri, hidden := uriHiddenEverywhere(p, u.Add); hidden {
		return nil, codeError(service.NotFound, "resource %q not found", uri)
	}
	acks, err := m.Update(ctx, u.ID, u.Add, u.Remove)
	switch {
	case errors.Is(err, subscriptions.ErrUnknownStream):
		return nil, codeError(service.NotFound, "%s", err.Error())
	case errors.Is(err, subscriptions.ErrInvalid):
		return nil, codeError(service.InvalidArgument, "%s", err.Error())
	case err != nil:
		return nil, ToError(err)
	}
	return acksToService(acks), nil
}

// noteWatchUse notes the servers w names as used by the app (sharing.go)
// when it watches what they serve: their lists or resources, not only
// their state or logs, which an operator's mcpdctl watch asks for.
func noteWatchUse(ctx context.Context, w subscriptions.Watch) {
	if !w.ToolsListChanged && !w.PromptsListChanged && !w.ResourcesListChanged && len(w.URIs) == 0 {
		return
	}
	for _, n := range w.Servers {
		noteUse(ctx, n, nil)
	}
}

// rootSharer reports the share of a server (*supervisor.Supervisor).
type rootSharer interface{ ShareOf(name string) string }

// watchesRootServer reports whether w watches a server shared per root.
func (s *Service) watchesRootServer(w subscriptions.Watch) bool {
	rs, ok := s.sup.(rootSharer)
	if !ok {
		return false
	}
	names := w.Servers
	if len(names) == 0 {
		names = s.sup.Names()
	}
	return slices.ContainsFunc(names, func(n string) bool { return rs.ShareOf(n) == supervisor.ShareRoot })
}

// subscribeProfile scopes a watch to the call's profile: its servers only
// (all of them when the watch names none), and no resource it hides. It
// returns the profile's name ("" for none).
func (s *Service) subscribeProfile(ctx context.Context, w *subscriptions.Watch) (string, error) {
	p, err := s.profileOf(ctx)
	if err != nil || p == nil {
		return "", err
	}
	if len(w.Servers) == 0 {
		w.Servers = p.ServerNames()
	}
	for _, n := range w.Servers {
		if _, err := gateServer(p, n); err != nil {
			return "", err
		}
	}
	// A URI is watched on the servers that show it, and refused only when
	// none does: a host of several servers subscribes to one server's
	// resource, and another server hiding it must not fail the stream.
	for _, u := range w.URIs {
		if subscriptions.IsTaskURI(u) {
			continue // watched on its own server only
		}
		if !slices.ContainsFunc(w.Servers, func(n string) bool { return p.Server(n).Resources.Allows(u) }) {
			return "", codeError(service.NotFound, "resource %q not found on %s", u, serversPhrase(w.Servers))
		}
	}
	w.AllowURI = s.profileAllowsURI(p.Name)
	return p.Name, nil
}

// profileAllowsURI says whether the named profile, as installed when it
// is asked (a reload may have changed its rules), shows uri of server.
func (s *Service) profileAllowsURI(name string) func(server, uri string) bool {
	return func(server, uri string) bool {
		p := s.profileSet()[name]
		if p == nil {
			return false
		}
		rs := p.Server(server)
		return rs != nil && rs.Resources.Allows(uri)
	}
}

// serversPhrase is `server "a"` or `servers "a", "b"`.
func serversPhrase(names []string) string {
	if len(names) == 1 {
		return fmt.Sprintf("server %q", names[0])
	}
	return "servers " + quoteNames(names)
}
