// Package bridge is an MCP server for one host in front of mcpd: it serves
// mcpd's supervised servers (one, or several as one with prefixed names)
// in both protocol eras, forwarding to mcpd through a Backend. ServeStdio
// runs it on a pipe, as "mcpdctl bridge" does.
package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// Timing: mcpd restarts must be noticed quickly.
const (
	readyTimeout   = 3 * time.Second
	retryMin       = 100 * time.Millisecond
	retryMax       = 2 * time.Second
	maxInputRounds = 10
)

// bridge is one running bridge. Request handlers run concurrently; mu
// guards the shared state below it.
type bridge struct {
	be      Backend
	opts    Options
	sink    Sink
	ownInfo json.RawMessage // the bridge's own serverInfo (Options.Name)
	// nameList is the served servers, in order; set once before the
	// bridge is up, and replaced whole when a whole profile's servers
	// change (reconfig.go). Read it with serverNames.
	nameList atomic.Pointer[[]string]
	aggr     bool // several servers: names by prefix mode
	timeout  time.Duration
	maxLine  int             // largest line accepted from the host
	born     time.Time       // when the bridge was made: its first lists wait from then
	ctx      context.Context // the bridge's life
	started  time.Time       // when the bridge was made (Options.StartWait)
	work     context.Context // Options.work: ends no sooner than ctx
	wg       sync.WaitGroup  // the bridge's own goroutines
	reqs     sync.WaitGroup  // request handlers
	// statusMu serialises passing on task statuses with learning a task
	// of a call (taskstatus.go), so that they reach the host in order;
	// taken before mu.
	statusMu sync.Mutex

	mu          sync.Mutex       // guards following; held for no Backend call
	prefix      profile.Prefix   // how names are prefixed when aggr (reconfig.go)
	profileInfo *service.Profile // the served profile as mcpd last described it
	info        map[string]*service.ServerStatus
	inflight    map[string]*inflightReq          // host request id → how it is cancelled
	atServer    map[string][]json.RawMessage     // a legacy host's requests in flight at each server, by scope, oldest first (host.go)
	hostWaits   map[string]chan *jsonrpc.Message // our requests to the host
	nextHostID  int64
	initialized bool            // a legacy host ran initialize
	initTaken   bool            // a legacy host's initialize is in flight or succeeded (admitLocked)
	hostCaps    json.RawMessage // what the legacy host declared
	hostInfo    json.RawMessage // the legacy host's clientInfo
	routes      map[string]route
	lists       map[string]*listMemo            // the last list of each method, whose routes are set (listmemo.go)
	toolParams  map[string]map[string]string    // tool → Mcp-Param header → argument
	toolsListed bool                            // toolParams holds a tools/list's
	uris        map[string]string               // resource URI → server that listed it
	skillURIs   map[string]string               // skill, skill root and skill file URI → server that listed it (extensions.go)
	taskIDs     map[string]string               // task id → server that returned it (extensions.go)
	strayStatus []strayStatus                   // task statuses of ids not known yet (taskstatus.go)
	subs        subState                        // subs.go
	upst        upState                         // up.go
	host        hostState                       // host.go
	open        openCalls                       // mrtr.go
	logLevel    string                          // set by a legacy host's logging/setLevel
	hostReady   bool                            // a legacy host sent notifications/initialized
	missing     map[string]string               // served servers down now → why (missing.go)
	warned      map[string]bool                 // warnings told once (missing.go)
	pending     map[string]*pendingList         // lists in flight, by method and server (slowlists.go)
	lastListed  map[string][]service.ServerList // each server's last list, by method and server (slowlists.go)
	stuck       map[string]bool                 // servers that never ran and failed a list that was given up on (slowlists.go)
	lastInfo    json.RawMessage                 // clientInfo's last info…
	lastClient  *service.Client                 // …and what it made of it (nil: none)
	refresh     refreshState                    // reconfig.go
	notices     [numNotices]string              // the profile's last notice of each kind (reconfig.go)
	changes     changeState                     // list changes not told yet (listchanged.go)
}

// route is where an exposed (possibly prefixed) tool or prompt name goes.
type route struct {
	server, name string
}

func newBridge(ctx context.Context, be Backend, opts Options, sink Sink) *bridge {
	if opts.Profile != "" || opts.Root != "" {
		be = profiled(be, opts.Profile, opts.Root)
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	own, _ := json.Marshal(map[string]string{"name": opts.Name, "version": version.Version})
	work := opts.work
	if work == nil {
		work = ctx
	}
	b := &bridge{
		work:       work,
		born:       time.Now(),
		changes:    newChangeState(),
		ownInfo:    own,
		be:         be,
		opts:       opts,
		sink:       sink,
		timeout:    opts.Timeout,
		maxLine:    opts.MaxLine,
		ctx:        ctx,
		started:    time.Now(),
		info:       map[string]*service.ServerStatus{},
		inflight:   map[string]*inflightReq{},
		atServer:   map[string][]json.RawMessage{},
		hostWaits:  map[string]chan *jsonrpc.Message{},
		routes:     map[string]route{},
		uris:       map[string]string{},
		skillURIs:  map[string]string{},
		taskIDs:    map[string]string{},
		missing:    map[string]string{},
		pending:    map[string]*pendingList{},
		lastListed: map[string][]service.ServerList{},
		stuck:      map[string]bool{},
		subs:       newSubState(),
		upst:       newUpState(),
		host:       newHostState(),
		open:       newOpenCalls(),
	}
	context.AfterFunc(ctx, b.endInflight) // runs once ctx ends, which ends the bridge
	return b
}

// Bounds of a bridge's start. Serving one server, it waits singleStartWait
// for the server to be ready and described: a host gives its server about
// 10 s to start (Codex's default), and a host answered with the default
// capabilities is told once the server is described (the host's own
// requests wait for the server as long as they need). Serving several,
// the start waits aggrListWait in all for the servers to be ready and
// list, and a list it asks only once that has passed (a prompts list,
// after the tools) gets minListWait.
const singleStartWait = 8 * time.Second

// setup resolves the servers, learns what they offer and, when serving
// several, checks that no prefixed name clashes. It runs on one goroutine
// at a time; after a failure it may run again (setupLoop), and then does
// not resolve the names twice.
func (b *bridge) setup(ctx context.Context, names []string, all bool) error {
	if err := b.ready(ctx); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if !b.upst.resolved {
		if err := b.resolveNames(rctx, names, all); err != nil {
			return err
		}
		b.upst.resolved = true
		// Subscribing starts the servers and their upstream subscriptions, so
		// that the lists fetched next stay in mcpd's cache.
		b.wg.Go(func() { b.subscribeLoop(ctx) })
	}
	b.mu.Lock()
	open := b.subs.open
	b.mu.Unlock()
	// A server slow to start (or stuck in its handshake) is not waited
	// for long: the host is answered with the defaults, and the server is
	// described, and the host told its lists changed, once it is ready.
	limit := singleStartWait
	if b.aggr {
		limit = aggrListWait
		b.askTools() // in flight from now: the start's one wait covers them
	}
	wait, cancelWait := context.WithTimeout(rctx, limit)
	defer cancelWait()
	select {
	case <-open:
	case <-wait.Done():
	}
	if !b.aggr {
		// Described if ready by now, else once it is (serverState).
		dctx, cancelD := context.WithTimeout(rctx, refreshWait)
		defer cancelD()
		if err := b.describe(dctx, wait.Err() == nil); err != nil && dctx.Err() == nil {
			return err
		}
		return nil
	}
	deadline, _ := wait.Deadline()
	lctx := withListsBy(rctx, deadline)
	if err := b.describe(lctx, true); err != nil && rctx.Err() == nil {
		return err
	}
	// "a clash is an error at start-up, not a silent shadow"; a server too
	// slow for this check is checked on the host's lists.
	for _, kind := range []string{"tools/list", "prompts/list"} {
		if _, err := b.list(lctx, kind); err != nil && rctx.Err() == nil {
			return fmt.Errorf("%s: %s", kind, err.Message)
		}
	}
	return nil
}

// resolveNames checks the named servers (or finds every enabled one) and
// records them.
func (b *bridge) resolveNames(rctx context.Context, names []string, all bool) error {
	resp, err := b.be.ListServers(rctx)
	if err != nil {
		return b.opts.RPCError(rctx, err, "")
	}
	known := map[string]bool{}
	for _, s := range resp.Servers {
		known[s.Name] = true
		if all && !s.Disabled {
			names = append(names, s.Name)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !known[n] {
			if b.opts.Profile != "" {
				return fmt.Errorf("no such server %q in profile %q", n, b.opts.Profile)
			}
			return fmt.Errorf("no such server %q", n)
		}
		if seen[n] {
			return fmt.Errorf("server %q named twice", n)
		}
		seen[n] = true
	}
	if len(names) == 0 {
		if b.opts.Profile != "" {
			return fmt.Errorf("profile %q has no enabled servers to bridge", b.opts.Profile)
		}
		return errors.New("mcpd has no enabled servers to bridge")
	}
	// Request handlers read aggr without the lock once the bridge is up;
	// listens and subscription events may read it before.
	b.nameList.Store(&names)
	b.mu.Lock()
	b.aggr = len(names) > 1 || all
	b.prefix = prefixMode(b.opts.Prefix, resp.Profile)
	b.profileInfo = resp.Profile
	b.mu.Unlock()
	return nil
}

// serverNames are the served servers, in order (none before the bridge
// knows them). The slice is never changed: a change replaces it.
func (b *bridge) serverNames() []string {
	if p := b.nameList.Load(); p != nil {
		return *p
	}
	return nil
}

// describe learns each server's capabilities, serverInfo and instructions
// from mcpd's status; with start, it first starts servers that are not
// running yet (a list call starts a server lazily; an operator's explicit
// stop is respected).
func (b *bridge) describe(ctx context.Context, start bool) error {
	st, err := b.be.ListServers(ctx)
	if err != nil {
		return b.opts.RPCError(ctx, err, "")
	}
	byName := map[string]*service.ServerStatus{}
	for i := range st.Servers {
		byName[st.Servers[i].Name] = &st.Servers[i]
	}
	var starting []string
	for _, n := range b.serverNames() {
		if s := byName[n]; s == nil || len(s.Capabilities) == 0 {
			starting = append(starting, n)
		}
	}
	if len(starting) > 0 && start {
		b.startServers(ctx, starting)
		if st, err = b.be.ListServers(ctx); err != nil {
			return b.opts.RPCError(ctx, err, "")
		}
		for i := range st.Servers {
			byName[st.Servers[i].Name] = &st.Servers[i]
		}
	}
	b.mu.Lock()
	for _, n := range b.serverNames() {
		if s := byName[n]; s != nil && len(s.Capabilities) > 0 {
			b.info[n] = s
		}
	}
	b.mu.Unlock()
	return nil
}

// ready waits until mcpd can be reached; once the bridge is ending it
// fails with that.
func (b *bridge) ready(ctx context.Context) error {
	err := b.be.Ready(ctx)
	if err != nil && b.ctx.Err() != nil {
		return b.ctx.Err()
	}
	return err
}

// keepOpen runs stream until ctx ends: again at once after a stream that
// was established (it returned true), else after a delay that doubles from
// retryMin up to retryMax while mcpd stays away.
func keepOpen(ctx context.Context, stream func() (established bool)) {
	delay := retryMin
	for ctx.Err() == nil {
		if stream() {
			delay = retryMin
			continue
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		delay = min(delay*2, retryMax)
	}
}

// dispatch handles one line of the host; for a subscriptions/listen it
// returns a channel closed once the listen is in place.
func (b *bridge) dispatch(ctx context.Context, line []byte) <-chan struct{} {
	m, err := jsonrpc.DecodeMessage(line)
	switch {
	case err != nil && jsonrpc.IsBatch(line):
		b.write(&jsonrpc.Message{ID: json.RawMessage("null"), Error: jsonrpc.BatchError()})
		return nil
	case err != nil:
		b.write(&jsonrpc.Message{ID: json.RawMessage("null"), Error: jsonrpc.Errorf(jsonrpc.CodeParseError, "parse error: %v", err)})
		return nil
	}
	if bad := jsonrpc.CheckIncoming(&m, line); bad != nil {
		if m.Method == "" && (m.Result != nil || m.Error != nil) {
			// A broken answer to a request of the bridge: answering
			// an answer is no use; the request times out.
			b.opts.Warnf("bridge: dropped the host's message: %s", bad.Message)
			return nil
		}
		b.write(&jsonrpc.Message{ID: jsonrpc.AnswerID(&m), Error: bad})
		return nil
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		return b.startRequest(ctx, &m)
	case m.Method != "":
		b.notification(&m)
	case hasID:
		b.mu.Lock()
		ch := b.hostWaits[idKey(m.ID)]
		delete(b.hostWaits, idKey(m.ID))
		b.mu.Unlock()
		if ch != nil {
			ch <- &m
		}
	}
	return nil
}

func (b *bridge) notification(m *jsonrpc.Message) {
	switch m.Method {
	case "notifications/cancelled":
		// "Receiver should stop work, free resources and not answer."
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
			b.mu.Lock()
			r := b.inflight[idKey(p.RequestID)]
			b.mu.Unlock()
			if r != nil {
				r.cancelByHost(p.Reason)
			}
		}
	case "notifications/initialized":
		b.hostOpened()
	case "notifications/roots/list_changed", "notifications/progress":
		// Nothing to do: mcpd asks for roots when a child needs them.
	}
}

// startRequest runs one host request in its own goroutine; a
// notifications/cancelled for its id cancels its context, and then no
// answer is sent. For a subscriptions/listen it returns a channel closed
// once the listen is acknowledged, or has ended. A request the session
// refuses (admitLocked) is answered at once.
func (b *bridge) startRequest(ctx context.Context, m *jsonrpc.Message) <-chan struct{} {
	req := parseRequest(m)
	run, refused := b.prepareRequest(ctx, req)
	if refused != nil {
		// Unscoped: the scope of this id is the request in flight.
		b.write(&jsonrpc.Message{ID: req.id, Error: refused})
		return nil
	}
	if m.Method == "subscriptions/listen" {
		req.acked = make(chan struct{})
	}
	b.reqs.Go(run)
	return req.acked
}

// prepareRequest registers host request req as in flight and returns the
// function that serves it: it answers through the sink, in req's scope,
// unless the request was cancelled. A request the session refuses gets
// that error instead, and nothing changes.
func (b *bridge) prepareRequest(ctx context.Context, req *hostReq) (func(), *jsonrpc.Error) {
	key := idKey(req.id)
	b.mu.Lock()
	if refused := b.admitLocked(key, req); refused != nil {
		b.mu.Unlock()
		return nil, refused
	}
	rctx, cancel := context.WithCancelCause(withScope(ctx, req.id))
	req.inflight = &inflightReq{cancel: cancel, withLife: req.endsWithBridge}
	b.inflight[key] = req.inflight
	if req.endsWithBridge && b.ctx.Err() != nil { // endInflight ran: it did not see this one
		cancel(context.Cause(b.ctx))
	}
	b.mu.Unlock()
	return func() {
		var rerr *jsonrpc.Error
		defer func() {
			b.mu.Lock()
			delete(b.inflight, key)
			b.mu.Unlock()
			cancel(nil)
			req.ack()
		}()
		var result json.RawMessage
		result, rerr = b.handle(rctx, req)
		if isLegacyInit(req) && rerr != nil {
			// Failed: the host may try again, as soon as it reads the
			// error, so before the error is written.
			b.mu.Lock()
			b.initTaken = false
			b.mu.Unlock()
		}
		if rctx.Err() != nil && !req.answerOnCancel {
			return // cancelled by the host, or the bridge is exiting
		}
		if rerr != nil {
			b.writeFor(rctx, &jsonrpc.Message{ID: req.id, Error: rerr})
			return
		}
		if req.modern {
			if !req.stamped {
				result = withServerInfo(result, b.serverInfo(), !b.aggr)
			}
		} else {
			result = forLegacyHost(result)
		}
		b.writeFor(rctx, &jsonrpc.Message{ID: req.id, Result: result})
	}, nil
}

// inflightReq is how a host request in flight is cancelled.
type inflightReq struct {
	cancel   context.CancelCauseFunc // the request's context's
	withLife bool                    // hostReq.endsWithBridge
	// byHost is set once the host cancelled it (notifications/cancelled):
	// it gets no answer, whatever else ends it.
	byHost atomic.Bool
}

// cancelByHost cancels the request as its host asked; the child is told
// reason.
func (r *inflightReq) cancelByHost(reason string) {
	r.byHost.Store(true)
	r.cancel(hostCancelled(reason))
}

// end cancels the request: its host is gone.
func (r *inflightReq) end() { r.cancel(nil) }

// endInflight cancels the host requests in flight that end with the
// bridge (hostReq.endsWithBridge), once its life has ended; one admitted
// later is cancelled as it is admitted (prepareRequest).
func (b *bridge) endInflight() {
	cause := context.Cause(b.ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.inflight {
		if r.withLife {
			r.cancel(cause)
		}
	}
}

// admitLocked is the error refusing host request req (its id's key is
// key), or nil when it may run; admitting a legacy initialize takes the
// session's one. The first of two requests with one id goes on untouched.
func (b *bridge) admitLocked(key string, req *hostReq) *jsonrpc.Error {
	if _, busy := b.inflight[key]; busy {
		// "The request ID MUST NOT have been previously used by the
		// requestor within the same session."
		return inFlightError(req.id)
	}
	if !isLegacyInit(req) {
		return nil
	}
	if b.initTaken {
		// "The initialization phase MUST be the first interaction": once.
		return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"invalid request: this session is initialized already; a host initializes once, with its first request")
	}
	b.initTaken = true
	return nil
}

// isLegacyInit reports whether req is a legacy host's initialize.
func isLegacyInit(req *hostReq) bool { return req.method == "initialize" && !req.modern }

// inFlightError is the JSON-RPC error answering a request whose id is that
// of a request still in flight from the same host session.
func inFlightError(id json.RawMessage) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "request id %s is already in flight in this session", id)
}

func idKey(raw json.RawMessage) string {
	if len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return string(raw) // a string or a number: compact already
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// hostRequest sends a request to the host and waits for its answer.
func (b *bridge) hostRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	ch := make(chan *jsonrpc.Message, 1)
	b.mu.Lock()
	b.nextHostID++
	id := json.RawMessage(strconv.Quote("mcpd-" + strconv.FormatInt(b.nextHostID, 10)))
	b.hostWaits[idKey(id)] = ch
	b.mu.Unlock()
	if len(params) == 0 {
		params = nil
	}
	b.writeFor(ctx, &jsonrpc.Message{ID: id, Method: method, Params: params})
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		if len(m.Result) == 0 {
			return json.RawMessage("{}"), nil
		}
		return m.Result, nil
	case <-b.ctx.Done():
		b.mu.Lock()
		delete(b.hostWaits, idKey(id))
		b.mu.Unlock()
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the client closed the connection")
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.hostWaits, idKey(id))
		b.mu.Unlock()
		// "either side may cancel its own earlier requests"
		b.notify(scopeOf(ctx), "notifications/cancelled", map[string]any{"requestId": id, "reason": "cancelled by the server"})
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
}

// rpcToMCP turns a failed RPC into the JSON-RPC error the host sees.
func (b *bridge) rpcToMCP(ctx context.Context, err error, server string) *jsonrpc.Error {
	return backendError(ctx, b.be, err, server)
}

// client is clientOf(info), decoded once for the info the host keeps
// sending (its requests name it the same way each time). What it returns
// is shared: it is only read from then on.
func (b *bridge) client(info json.RawMessage) *service.Client {
	b.mu.Lock()
	last, c, known := b.lastInfo, b.lastClient, b.lastInfo != nil
	b.mu.Unlock()
	if known && bytes.Equal(last, info) {
		return c
	}
	c = b.clientOf(info)
	b.mu.Lock()
	b.lastInfo, b.lastClient = append(json.RawMessage{}, info...), c
	b.mu.Unlock()
	return c
}

// clientOf is the host's identity for mcpd, nil for none: the app keeps
// the name mcpd gave it.
func (b *bridge) clientOf(info json.RawMessage) *service.Client {
	var ci struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	switch {
	case (json.Unmarshal(info, &ci) != nil || ci.Name == "") && b.opts.plainClient:
		return nil
	case ci.Name == "":
		return &service.Client{Name: "mcpdctl-bridge", Version: version.Version}
	case b.opts.plainClient:
		return &service.Client{Name: ci.Name, Version: ci.Version}
	}
	return &service.Client{Name: ci.Name + " (mcpdctl bridge)", Version: ci.Version}
}

// hostCancelled is the cause of a request the host cancelled: what the
// child's notifications/cancelled says (when the call runs in mcpd).
func hostCancelled(reason string) error {
	if reason == "" {
		return errors.New("cancelled by the host")
	}
	return fmt.Errorf("cancelled by the host: %s", reason)
}
