package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// This file wires each server's result cache (internal/cache) into the
// supervisor:
//
//   - CallCached and ListCached answer cacheable requests through the cache;
//     Call and List stay the plain upstream path.
//   - observeNotification invalidates on the child's change notifications.
//     It runs for every notification the session hands to
//     Options.OnNotification or Options.OnStrayNotification (start.go), on
//     the reader goroutine, so it is done before the response read after
//     the notification reaches its caller. Code that receives child
//     notifications by another route (a subscriptions/listen stream) must
//     call Supervisor.ObserveNotification before delivering them to anyone,
//     so that no app can read a stale result after it heard of the change.
//   - cacheOnEvent empties a server's cache whenever its process changes
//     (started, exited, stopped, failed), and takes the legacy listChanged
//     promises from the capabilities when it becomes ready.
//   - SetCachePromises is how upstream subscriptions (modern listen
//     acknowledgements, legacy resources/subscribe) extend validity to "until
//     notified".

// rpcFailure carries a child's JSON-RPC error through the cache: it is
// shared with coalesced callers but never stored.
type rpcFailure struct{ err *session.RPCError }

func (f *rpcFailure) Error() string { return f.err.Error() }

func newServerCache(s *Supervisor, spec Spec, log *zap.Logger) *cache.Cache {
	p, err := cache.ParsePolicy(spec.Cache)
	if err != nil {
		// Config validation rejects this before it gets here.
		log.Warn("invalid cache policy ignored", zap.String("cache", spec.Cache), zap.Error(err))
	}
	// The supervisor's clock, which tests replace after New.
	return cache.New(cache.Options{Policy: p, Now: func() time.Time { return s.now() }})
}

// CallCached is Call for apps: tools/list, prompts/list, resources/list,
// resources/templates/list (one page each) and resources/read are answered
// from the server's cache when valid, concurrent identical requests share
// one upstream request, and everything else goes upstream as Call does. The
// Source says which happened. A JSON-RPC error of the child is returned in
// Response.Error and never cached.
func (s *Supervisor) CallCached(ctx context.Context, server string, req *session.Request, opts CallOptions) (*session.Response, cache.Source, error) {
	if l := s.opts.Load; l != nil {
		l.Enter()
		defer l.Exit()
	}
	return s.cachedCall(ctx, server, req, opts)
}

// cachedCall is CallCached, not counted as load (a part of another call).
func (s *Supervisor) cachedCall(ctx context.Context, server string, req *session.Request, opts CallOptions) (*session.Response, cache.Source, error) {
	sv, err := s.target(ctx, server)
	if err != nil {
		return nil, cache.SourceFetched, err
	}
	if req == nil {
		return nil, cache.SourceFetched, fmt.Errorf("call %q: %w: method required", server, ErrInvalid)
	}
	if (req.Method == methodToolsCall || req.Method == methodToolsList) && s.opts.Pins != nil {
		if mode := sv.pinMode(); mode != pin.ModeOff {
			return s.callPinned(ctx, sv, req, opts, mode) // pin.go
		}
	}
	return s.callCachedOn(ctx, sv, req, opts)
}

// callCachedOn is CallCached on a server already looked up.
func (s *Supervisor) callCachedOn(ctx context.Context, sv *server, req *session.Request, opts CallOptions) (*session.Response, cache.Source, error) {
	server := sv.spec.Name
	var err error
	// tools/call and every other method that is never cached skip the key
	// (and the error NewKey would build for them): no work on params.
	var key cache.Key
	_, cacheable := cache.KindOf(req.Method)
	if cacheable {
		if key, err = cache.NewKey(req.Method, req.Params); err == nil {
			key = key.Scoped(sv.capsScope(ctx, req.ClientCapabilities))
		}
	}
	if !cacheable || err != nil {
		resp, err := s.callServer(ctx, sv, req, opts)
		return resp, cache.SourceFetched, err
	}
	ctx, cancel, opts := s.sharedCall(ctx, sv, opts)
	defer cancel()
	body, src, err := sv.cache.Do(ctx, key, func(ctx context.Context) (cache.Result, error) {
		resp, err := s.callServer(ctx, sv, req, opts)
		if err != nil {
			return cache.Result{}, err
		}
		if resp.Error != nil {
			return cache.Result{}, &rpcFailure{resp.Error}
		}
		ttl, storable := cache.Hints(resp.Result)
		return cache.Result{Body: resp.Result, TTL: ttl, NoStore: !storable}, nil
	})
	var rf *rpcFailure
	if errors.As(err, &rf) {
		return &session.Response{Error: rf.err}, src, nil
	}
	if err != nil {
		return nil, src, waitError(ctx, server, req.Method, err)
	}
	return &session.Response{Result: body}, src, nil
}

// sharedCall splits a caller's per-call timeout for a request that other
// callers may join: the caller waits at most its own timeout (the returned
// context), while the shared upstream request is bounded by the longer of
// that and the server's default, so that a caller who joined it is not cut
// short by the first caller's timeout.
func (s *Supervisor) sharedCall(ctx context.Context, sv *server, opts CallOptions) (context.Context, context.CancelFunc, CallOptions) {
	if opts.Timeout <= 0 {
		return ctx, func() {}, opts
	}
	own := min(opts.Timeout, s.opts.MaxRequestTimeout)
	wctx, cancel := context.WithTimeout(ctx, own)
	opts.Timeout = max(own, sv.requestTimeout())
	return wctx, cancel, opts
}

// waitError names the server and method in the error of a caller whose
// own wait for a shared request ended (its deadline or cancellation: the
// cache returns the context's cause as it is); errors of the request itself
// already name them.
func waitError(ctx context.Context, server, method string, err error) error {
	if err != nil && ctx.Err() != nil && err == context.Cause(ctx) {
		return &serverError{server: server, err: fmt.Errorf("server %q: %s: %w", server, method, err)}
	}
	return err
}

// List fetches every page of a list method (tools/list, prompts/list,
// resources/list, resources/templates/list) and returns the merged items as
// one JSON array, from the server's cache when valid; see ListCached.
func (s *Supervisor) List(ctx context.Context, server, method string, base *session.Request, opts CallOptions) (json.RawMessage, error) {
	items, _, err := s.cachedList(ctx, server, method, base, opts)
	return items, err
}

// ListCached is List that also says where the list came from. The merged
// array is cached as a whole: a hit costs no JSON work and returns the same
// bytes the fetch produced. It is valid while every page is (the shortest
// ttlMs of the pages), or until the matching list_changed when the server
// promised one. A JSON-RPC error of the child is returned as an error
// wrapping *session.RPCError, shared with coalesced callers and never cached.
func (s *Supervisor) ListCached(ctx context.Context, server, method string, base *session.Request, opts CallOptions) (json.RawMessage, cache.Source, error) {
	if l := s.opts.Load; l != nil {
		l.Enter()
		defer l.Exit()
	}
	return s.cachedList(ctx, server, method, base, opts)
}

// cachedList is ListCached, not counted as load (a part of another call).
func (s *Supervisor) cachedList(ctx context.Context, server, method string, base *session.Request, opts CallOptions) (json.RawMessage, cache.Source, error) {
	sv, err := s.target(ctx, server)
	if err != nil {
		return nil, cache.SourceFetched, err
	}
	var params json.RawMessage
	if base != nil {
		params = base.Params
	}
	var caps json.RawMessage
	if base != nil {
		caps = base.ClientCapabilities
	}
	key, err := cache.ListKey(method, params)
	var scope string
	if err == nil || method == methodToolsList {
		scope = sv.capsScope(ctx, caps)
	}
	if err == nil {
		key = key.Scoped(scope)
	}
	if err != nil {
		items, err := s.fetchList(ctx, server, method, base, opts, nil)
		if err == nil && method == methodToolsList {
			items, err = s.pinList(sv, pinVariant(scope, caps), items) // pin.go
		}
		return items, cache.SourceFetched, err
	}
	ctx, cancel, opts := s.sharedCall(ctx, sv, opts)
	defer cancel()
	body, src, err := sv.cache.Do(ctx, key, func(ctx context.Context) (cache.Result, error) {
		var h listHints
		items, err := s.fetchList(ctx, server, method, base, opts, &h)
		if err != nil {
			return cache.Result{}, err
		}
		return cache.Result{Body: items, TTL: h.ttl, NoStore: !h.storable}, nil
	})
	if err == nil && method == methodToolsList {
		body, err = s.pinList(sv, pinVariant(scope, caps), body) // pin.go
	}
	return body, src, waitError(ctx, server, method, err)
}

// capsScope is the part of a request's client declaration that keys the
// cache and the coalescing of its results (cache.Key.Scoped). A legacy
// child was told mcpd's own capabilities once, at initialize, and answers
// every app alike: its results are shared by all (""). Any other child
// (modern, or not known yet) sees each request's clientCapabilities and may
// shape its answer by them: hosts that declared alike share a result,
// hosts that declared otherwise never do. A result's cacheScope "private"
// needs nothing more: mcpd is one user's daemon and apps pass no
// credentials of their own, so they share one authorization context.
//
// The era is the running child's. With none running (a lazy start, a
// restart) the child is started first, within the server's request
// timeout, so that the key is the one every later request uses; if it
// cannot start, the request's own declaration keys it (the request fails
// the same way a moment later).
func (sv *server) capsScope(ctx context.Context, caps json.RawMessage) string {
	if sv.currentSpec().Protocol == session.ProtocolLegacy {
		return ""
	}
	c := sv.ready.Load()
	if c == nil || c.gone() {
		wctx, cancel := context.WithTimeout(ctx, sv.requestTimeout())
		c, _ = sv.readyChild(wctx)
		cancel()
	}
	if c != nil && c.info.Era == session.EraLegacy {
		return ""
	}
	return jsonrpc.CapsDigest(caps)
}

// listHints gathers the caching hints of the pages of one list: "each page
// is cached independently with its own ttlMs", so the merged list lives as
// long as its shortest-lived page.
type listHints struct {
	ttl      time.Duration
	storable bool
	pages    int
}

func (h *listHints) page(result json.RawMessage) {
	ttl, ok := cache.Hints(result)
	if h.pages == 0 {
		h.ttl, h.storable = ttl, ok
	} else {
		h.ttl, h.storable = min(h.ttl, ttl), h.storable && ok
	}
	h.pages++
}

// ObserveNotification invalidates the cached results a child notification
// of server announces (list_changed, resources/updated). Whoever delivers a
// child's notifications to apps by a route other than
// Options.OnNotification must call it first.
func (s *Supervisor) ObserveNotification(server string, n session.Notification) {
	sv, err := s.lookup(server)
	if err != nil {
		return
	}
	sv.observeNotification(n)
}

func (sv *server) observeNotification(n session.Notification) {
	sv.pinNotification(n) // pin.go
	if ch, ok := cache.ChangeOf(n.Method, n.Params); ok {
		// Logged only when something was dropped: a server may send
		// thousands of updates for resources nobody reads.
		if dropped := sv.cache.Invalidate(ch); dropped > 0 {
			sv.log.Debug("cache invalidated", zap.String("method", n.Method), zap.String("uri", ch.URI), zap.Int("entries", dropped))
		}
	}
}

// SetCachePromises records the change notifications that mcpd's upstream
// subscriptions on the process pid of server guarantee: the list kinds an
// acknowledged modern listen covers and the resource URIs with an
// acknowledged subscription (modern listen or legacy resources/subscribe).
// Results of those kinds then stay cached until their notification. Call it
// again with the new set whenever it changes (a listen ended: fewer
// promises); results that relied on a withdrawn promise are dropped. A call
// for a process that is no longer current is ignored.
func (s *Supervisor) SetCachePromises(server string, pid int, p cache.Promises) error {
	sv, err := s.lookup(server)
	if err != nil {
		return err
	}
	sv.setCachePromises(pid, p)
	return nil
}

// setCachePromises is SetCachePromises of sv (an instance included).
func (sv *server) setCachePromises(pid int, p cache.Promises) {
	sv.mu.Lock()
	cur := sv.st.pid
	sv.mu.Unlock()
	if pid == cur {
		sv.cache.SetPromises(cache.FromSubscriptions, p)
	}
}

// ClearCache drops the cached results of the named server, or of every
// server when name is empty ("mcpdctl cache clear [NAME]"); it returns how many
// results were dropped.
func (s *Supervisor) ClearCache(name string) (int, error) {
	if name != "" {
		sv, err := s.lookup(name)
		if err != nil {
			return 0, err
		}
		n := sv.cache.Clear()
		sv.log.Info("cache cleared", zap.Int("entries", n))
		return n, nil
	}
	s.mu.Lock()
	servers := make([]*server, 0, len(s.servers))
	for _, sv := range s.servers {
		servers = append(servers, sv)
	}
	s.mu.Unlock()
	total := 0
	for _, sv := range servers {
		total += sv.cache.Clear()
	}
	s.log.Info("cache cleared", zap.Int("entries", total))
	return total, nil
}

// cacheOnEvent keeps a server's cache in step with its process: "cached
// results of that process are dropped" with its promises when it exits or
// is stopped, so a new process starts with an empty cache; a legacy process
// that is ready promises list_changed for the kinds whose capabilities say
// listChanged: true. It runs before the event is published.
func (s *Supervisor) cacheOnEvent(ev Event) {
	sv, err := s.eventServer(ev) // instances.go
	if err != nil {
		return
	}
	switch ev.Kind {
	case EventExited, EventStopped, EventFailed, EventCrashLoop:
		// (Not EventStarted: requests waiting for the new process are
		// answered by it, and what the old one said was dropped when it
		// ended.)
		if n := sv.cache.Reset(); n > 0 {
			sv.log.Debug("cache emptied", zap.String("event", string(ev.Kind)), zap.Int("entries", n))
		}
	case EventReady:
		sv.mu.Lock()
		info := sv.st.info
		sv.mu.Unlock()
		sv.cache.SetPromises(cache.FromCapabilities, legacyPromises(info))
	}
}

// legacyPromises reads the listChanged flags of a legacy child: "a server
// that advertised <kind>.listChanged: true sends notifications/<kind>/
// list_changed ... whenever it likes after initialization; no opt-in". A
// modern child's flags only say what a listen could deliver; they promise
// nothing until a listen is acknowledged (SetCachePromises).
func legacyPromises(info session.Info) cache.Promises {
	if info.Era != session.EraLegacy || len(info.Capabilities) == 0 {
		return cache.Promises{}
	}
	var caps struct {
		Tools     struct{ ListChanged bool } `json:"tools"`
		Prompts   struct{ ListChanged bool } `json:"prompts"`
		Resources struct{ ListChanged bool } `json:"resources"`
	}
	if json.Unmarshal(info.Capabilities, &caps) != nil {
		return cache.Promises{}
	}
	return cache.Promises{
		Tools:     caps.Tools.ListChanged,
		Prompts:   caps.Prompts.ListChanged,
		Resources: caps.Resources.ListChanged,
	}
}

// waitCaches waits for the fetches every server's cache started.
func (s *Supervisor) waitCaches() {
	s.mu.Lock()
	servers := make([]*server, 0, len(s.servers))
	for _, sv := range s.servers {
		servers = append(servers, sv)
	}
	s.mu.Unlock()
	for _, sv := range servers {
		sv.cache.Wait()
	}
}
