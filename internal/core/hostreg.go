package core

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// Methods a legacy child may ask of its client that mcpd relays to a host.
const (
	methodRootsList      = "roots/list"
	methodCreateMessage  = "sampling/createMessage"
	methodElicit         = "elicitation/create"
	hostCallQueue        = 16
	hostGoneErrorMessage = "the app answering this request went away"
)

// methodElicitURL is the request kind of an elicitation/create in url
// mode, which only a host that declared elicitation.url answers.
const methodElicitURL = "elicitation/create (url mode)"

// hostCaps are the request kinds a host answers.
type hostCaps struct {
	roots, sampling, elicitation, elicitationURL bool
}

func (c hostCaps) answers(kind string) bool {
	switch kind {
	case methodRootsList:
		return c.roots
	case methodCreateMessage:
		return c.sampling
	case methodElicit:
		return c.elicitation
	case methodElicitURL:
		return c.elicitation && c.elicitationURL
	}
	return false
}

// requestKind is the kind of a child's request a host must answer: its
// method, or methodElicitURL for an elicitation in url mode.
func requestKind(method string, params json.RawMessage) string {
	if method != methodElicit {
		return method
	}
	var p struct {
		Mode string `json:"mode"`
	}
	if json.Unmarshal(params, &p) == nil && p.Mode == "url" {
		return methodElicitURL
	}
	return method
}

// capabilityOf names the client capability that answers a request kind,
// for errors.
func capabilityOf(kind string) string {
	switch kind {
	case methodRootsList:
		return "roots"
	case methodCreateMessage:
		return "sampling"
	case methodElicit:
		return "elicitation"
	case methodElicitURL:
		return "elicitation.url"
	}
	return kind
}

// hostCall is one child request on its way to a host.
type hostCall struct {
	id     uint64
	server string
	method string
	params json.RawMessage
}

// hostAnswer is a host's answer to one hostCall.
type hostAnswer struct {
	result json.RawMessage
	err    *session.RPCError
}

// host is one registered Host stream.
type host struct {
	id      uint64
	conn    uint64          // the app's connection (appConn.id), 0 if unknown
	servers map[string]bool // nil: every server
	caps    hostCaps
	name    string
	scope   hostScope // whose it is (hostscope.go)
	// rootsKnown is closed once the host answered (or failed) the
	// roots/list that a call needing its root asked (hostscope.go).
	rootsKnown chan struct{}

	// out carries calls, cancels and notifications to the stream's sender; done is closed
	// when the stream ended.
	out  chan any // hostCall, hostCancel or hostNotice
	done chan struct{}

	mu           sync.Mutex // guards pending, rootsAsked, declaredRoot
	pending      map[uint64]chan hostAnswer
	rootsAsked   bool   // a roots/list was sent to learn its root
	declaredRoot string // the first root it declared (hostscope.go)
}

// hostCancel tells the host a call is no longer wanted.
type hostCancel struct {
	id     uint64
	reason string
}

func (h *host) serves(server string) bool { return h.servers == nil || h.servers[server] }

// deliver hands the host's answer to the waiting call; unknown ids (late
// answers to cancelled calls) are dropped.
func (h *host) deliver(id uint64, a hostAnswer) {
	h.mu.Lock()
	ch := h.pending[id]
	delete(h.pending, id)
	h.mu.Unlock()
	if ch != nil {
		ch <- a // buffered 1
	}
}

// flightKey names the calls of one app connection on one server.
type flightKey struct {
	server string
	conn   uint64
}

// flight counts an app's calls in flight on a server; seq orders the most
// recent start. Flights are stored by value, so that beginning a call
// allocates nothing under the registry's lock.
type flight struct {
	n   int
	seq uint64
}

// hostRegistry routes the requests children send to mcpd (roots/list,
// sampling/createMessage, elicitation/create) to the apps registered as
// hosts: "preferring the app whose call to that server is in flight, then
// the most recent host". Its methods are safe for concurrent use.
type hostRegistry struct {
	mu      sync.Mutex // guards following
	seq     uint64     // last host id, call id and flight sequence number
	hosts   []*host    // registration order
	flights map[flightKey]flight
	// elicits are the url elicitations awaiting their completion, by
	// the host they were sent to; elicitOrder, oldest first
	// (hostnotice.go).
	elicits     map[elicitKey]*host
	elicitOrder []elicitKey
}

func newHostRegistry() *hostRegistry {
	return &hostRegistry{flights: map[flightKey]flight{}, elicits: map[elicitKey]*host{}}
}

// register adds a host and returns it.
func (r *hostRegistry) register(conn uint64, name string, servers []string, caps hostCaps) *host {
	return r.registerFor(conn, name, hostScope{}, servers, caps)
}

// registerFor is register of a host whose app and root are known.
func (r *hostRegistry) registerFor(conn uint64, name string, sc hostScope, servers []string, caps hostCaps) *host {
	h := &host{
		conn:       conn,
		caps:       caps,
		name:       name,
		scope:      sc,
		rootsKnown: make(chan struct{}),
		out:        make(chan any, hostCallQueue),
		done:       make(chan struct{}),
		pending:    map[uint64]chan hostAnswer{},
	}
	if len(servers) > 0 {
		h.servers = map[string]bool{}
		for _, s := range servers {
			h.servers[s] = true
		}
	}
	r.mu.Lock()
	r.seq++
	h.id = r.seq
	r.hosts = append(r.hosts, h)
	r.mu.Unlock()
	return h
}

// unregister removes h; its waiting calls fail ("A request whose host
// disappears is answered with an error, never left hanging").
func (r *hostRegistry) unregister(h *host) {
	r.mu.Lock()
	for i, x := range r.hosts {
		if x == h {
			r.hosts = append(r.hosts[:i:i], r.hosts[i+1:]...)
			break
		}
	}
	r.dropElicitationsLocked(h)
	r.mu.Unlock()
	close(h.done)
}

// beginCall records a call of conn on server; endCall with the returned
// key ends it. It is on every call's path, so it allocates nothing (no
// closure, flights stored by value).
func (r *hostRegistry) beginCall(server string, conn uint64) flightKey {
	if server == "" || conn == 0 {
		return flightKey{}
	}
	k := flightKey{server, conn}
	r.mu.Lock()
	f := r.flights[k]
	r.seq++
	f.n++
	f.seq = r.seq
	r.flights[k] = f
	r.mu.Unlock()
	return k
}

// endCall ends a call begun by beginCall; the zero key is ignored.
func (r *hostRegistry) endCall(k flightKey) {
	if k.conn == 0 {
		return
	}
	r.mu.Lock()
	if f := r.flights[k]; f.n <= 1 {
		delete(r.flights, k)
	} else {
		f.n--
		r.flights[k] = f
	}
	r.mu.Unlock()
}

// pick chooses the host for a request of server: among the hosts that
// serve server and answer method, the one whose app has the most recently
// started call in flight on server, else the most recently registered.
func (r *hostRegistry) pick(server, method string) *host {
	return r.pickFor(server, method, nil)
}

// pickFor is pick among the hosts of ri's owner, when ri is set (a request
// of an instance of a shared server, hostscope.go).
func (r *hostRegistry) pickFor(server, method string, ri *supervisor.RequestInstance) *host {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *host
	var bestSeq uint64
	for i := len(r.hosts) - 1; i >= 0; i-- {
		h := r.hosts[i]
		if !h.serves(server) || !h.caps.answers(method) || (ri != nil && !h.ownedBy(*ri)) {
			continue
		}
		if best == nil {
			best = h // the most recent host
		}
		if f, ok := r.flights[flightKey{server, h.conn}]; ok && f.seq > bestSeq {
			best, bestSeq = h, f.seq
		}
	}
	return best
}

// serve answers one request of a child of server. It is the supervisor's
// OnRequest hook.
func (r *hostRegistry) serve(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
	if method == methodRootsList && session.Unsolicited(ctx) {
		// A roots/list tied to no call is answered from the roots mcpd
		// knows, never relayed: a modern host can be asked only through
		// one of its calls (input_required), which this request is not of.
		// -32601 leaves it to the supervisor, which answers the config's
		// roots (supervisor roots.go).
		var ri *supervisor.RequestInstance
		if x, ok := supervisor.RequestInstanceFrom(ctx); ok {
			ri = &x
		}
		if roots := r.knownRoots(server, ri); len(roots) > 0 {
			return supervisor.RootsResult(roots), nil
		}
		return nil, &session.RPCError{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("no app connected to mcpd declared its roots for server %q", server)}
	}
	var h *host
	kind := requestKind(method, params)
	if ri, ok := supervisor.RequestInstanceFrom(ctx); ok {
		if h = r.pickFor(server, kind, &ri); h == nil {
			return nil, &session.RPCError{Code: jsonrpc.CodeMethodNotFound,
				Message: fmt.Sprintf("no app connected to mcpd for instance %q of server %q answers %s (none declared the %s capability)", ri.Key, server, kind, capabilityOf(kind))}
		}
	} else if h = r.pick(server, kind); h == nil {
		// "If no host can answer, mcpd answers -32601."
		return nil, &session.RPCError{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("no app connected to mcpd answers %s for server %q (none declared the %s capability)", kind, server, capabilityOf(kind))}
	}
	if kind == methodElicitURL {
		return r.elicitURL(ctx, h, server, params) // hostnotice.go
	}
	return r.send(ctx, h, server, method, params)
}

// send relays one request to h and waits for its answer.
func (r *hostRegistry) send(ctx context.Context, h *host, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
	r.mu.Lock()
	r.seq++
	id := r.seq
	r.mu.Unlock()
	ch := make(chan hostAnswer, 1)
	h.mu.Lock()
	h.pending[id] = ch
	h.mu.Unlock()
	forget := func() {
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
	}
	call := hostCall{id: id, server: server, method: method, params: params}
	select {
	case h.out <- call:
	case <-h.done:
		forget()
		return nil, &session.RPCError{Code: jsonrpc.CodeInternalError, Message: hostGoneErrorMessage}
	case <-ctx.Done():
		forget()
		return nil, &session.RPCError{Code: jsonrpc.CodeInternalError, Message: "request cancelled"}
	}
	select {
	case a := <-ch:
		return a.result, a.err
	case <-h.done:
		forget()
		return nil, &session.RPCError{Code: jsonrpc.CodeInternalError, Message: hostGoneErrorMessage}
	case <-ctx.Done():
		// The child cancelled the request or exited: tell the host.
		forget()
		select {
		case h.out <- hostCancel{id: id, reason: context.Cause(ctx).Error()}:
		case <-h.done:
		default: // a full queue: the host's answer will be dropped as unknown
		}
		return nil, &session.RPCError{Code: jsonrpc.CodeInternalError, Message: "request cancelled"}
	}
}
