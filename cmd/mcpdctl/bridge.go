package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var bridgeCmd = &command{
	name:     "bridge",
	synopsis: "NAME... | --all",
	short:    "serve mcpd's servers to an MCP host on stdin/stdout",
	long: `The bridge is an MCP server on stdio for hosts that launch servers as
commands (Claude Desktop, Cursor, VS Code, Zed): configure the host to run
"mcpdctl bridge NAME" instead of the server itself, and it uses the shared,
supervised, cached server through mcpd. It speaks both protocol eras
(initialize and server/discover). With several names, or --all, the servers
are served as one: tool and prompt names are prefixed "server__name".
Requests a legacy server sends to its client (roots/list,
sampling/createMessage, elicitation/create) reach the host behind the
bridge when the host declared it answers them: a legacy host as requests,
a modern host as an input_required result of its call in flight. Log
messages reach the host for its own requests once it asked for them
(logging/setLevel, or a per-request logLevel); after logging/setLevel, also
those a server sends outside any request. If mcpd is not running,
the bridge still starts, answers requests with "mcpd is not running",
and connects when mcpd is there. A server that is down (crash loop,
failed, stopped) does not stop the bridge: serving several, the others
are served and the host is warned which one is missing; serving one,
requests get the reason. When it runs again the host is told its lists
changed. Lines longer than --max-line-size are answered with an error.
The bridge exits when the host closes stdin; nothing but MCP messages is
written to stdout.`,
	run: runBridge,
}

// bridgeStdin is the host's side of the bridge; a variable for tests.
var bridgeStdin io.Reader = os.Stdin

// Connection settings: mcpd restarts must be noticed quickly.
const (
	bridgeReadyTimeout = 3 * time.Second
	bridgeRetryMin     = 100 * time.Millisecond
	bridgeRetryMax     = 2 * time.Second
	maxInputRounds     = 10
)

// bridge is one running mcpdctl bridge. Request handlers run concurrently;
// mu guards the shared state below it.
type bridge struct {
	c       *cli
	conn    *grpc.ClientConn
	client  mcpdv1.McpdClient
	socket  string
	names   []string // served servers, in order
	aggr    bool     // several servers: prefixed names
	timeout time.Duration
	maxLine int // --max-line-size
	ctx     context.Context
	wg      sync.WaitGroup // the bridge's own goroutines
	reqs    sync.WaitGroup // request handlers
	writeMu sync.Mutex     // serializes stdout
	syncMu  sync.Mutex     // serializes UpdateSubscription calls
	out     io.Writer

	mu          sync.Mutex // guards following
	info        map[string]*mcpdv1.ServerStatus
	inflight    map[string]context.CancelFunc    // host request id → cancel
	hostWaits   map[string]chan *jsonrpc.Message // our requests to the host
	nextHostID  int64
	initialized bool            // a legacy host ran initialize
	hostCaps    json.RawMessage // what the legacy host declared
	hostInfo    json.RawMessage // the legacy host's clientInfo
	routes      map[string]route
	uris        map[string]string // resource URI → server that listed it
	subs        subState          // bridge_subs.go
	upst        upState           // bridge_up.go
	host        hostState         // bridge_host.go
	open        openCalls         // bridge_mrtr.go
	logLevel    string            // set by a legacy host's logging/setLevel
	hostReady   bool              // a legacy host sent notifications/initialized
	missing     map[string]string // served servers down now → why (bridge_missing.go)
}

// route is where an exposed (possibly prefixed) tool or prompt name goes.
type route struct {
	server, name string
}

func runBridge(ctx context.Context, c *cli, cmd *command, args []string) error {
	fs := c.flags(cmd)
	all := fs.Bool("all", false, "serve every enabled server")
	// Per forwarded request; the bridge itself runs until stdin ends.
	timeout := timeoutFlag(fs, 0)
	maxLine := fs.Int("max-line-size", defaultBridgeMaxLine, "largest message line accepted from the host, in bytes")
	names, err := c.parse(cmd, fs, args)
	if err != nil {
		return err
	}
	if *all == (len(names) > 0) {
		return &usageError{cmd: cmd, msg: "name at least one server, or use --all"}
	}
	if *maxLine <= 0 {
		return &usageError{cmd: cmd, msg: "--max-line-size must be a positive number of bytes"}
	}
	// life ends when the host closes stdin: subscriptions and requests to
	// the host end then, while requests in flight still get their answer.
	life, cancel := context.WithCancel(ctx)
	defer cancel()
	b, err := newBridge(life, c)
	if err != nil {
		return err
	}
	defer b.conn.Close()
	b.timeout = *timeout
	b.maxLine = *maxLine
	if err := b.setup(life, names, *all); err == nil {
		close(b.upst.up)
	} else if b.mcpdDown() {
		// Hosts start their servers at launch, maybe before mcpd: serve
		// anyway and reach mcpd when it is there.
		b.c.warnf("bridge: %v; waiting for it", b.c.notRunning())
		b.mu.Lock()
		b.upst.err = b.c.notRunning()
		b.mu.Unlock()
		b.wg.Go(func() { b.setupLoop(life, names, *all) })
	} else {
		cancel()
		b.wg.Wait()
		return err
	}
	err = b.serve(ctx, bridgeStdin)
	cancel()
	b.reqs.Wait()
	b.wg.Wait()
	return err
}

func newBridge(ctx context.Context, c *cli) (*bridge, error) {
	path, err := resolveSocket(c.socketFlag)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("unix://"+path, dialOptions(
		// Reconnect soon after mcpd comes back (the default backoff grows to 2 minutes).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: bridgeRetryMin, Multiplier: 1.6, Jitter: 0.2, MaxDelay: bridgeRetryMax},
			MinConnectTimeout: bridgeReadyTimeout,
		}))...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	c.socket = path
	return &bridge{
		c:         c,
		conn:      conn,
		client:    mcpdv1.NewMcpdClient(conn),
		socket:    path,
		ctx:       ctx,
		out:       c.stdout,
		info:      map[string]*mcpdv1.ServerStatus{},
		inflight:  map[string]context.CancelFunc{},
		hostWaits: map[string]chan *jsonrpc.Message{},
		routes:    map[string]route{},
		uris:      map[string]string{},
		missing:   map[string]string{},
		subs:      newSubState(),
		upst:      newUpState(),
		host:      newHostState(),
		open:      newOpenCalls(),
	}, nil
}

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
	select {
	case <-open:
	case <-rctx.Done():
	}
	if err := b.describe(rctx); err != nil {
		return err
	}
	if b.aggr {
		// "a clash is an error at start-up, not a silent shadow"
		for _, kind := range []string{"tools/list", "prompts/list"} {
			if _, err := b.list(rctx, kind); err != nil {
				return fmt.Errorf("%s: %s", kind, err.Message)
			}
		}
	}
	return nil
}

// resolveNames checks the named servers (or finds every enabled one) and
// records them.
func (b *bridge) resolveNames(rctx context.Context, names []string, all bool) error {
	resp, err := b.client.ListServers(rctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return b.c.rpcError(rctx, err, "")
	}
	known := map[string]bool{}
	for _, s := range resp.GetServers() {
		known[s.GetName()] = true
		if all && !s.GetDisabled() {
			names = append(names, s.GetName())
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !known[n] {
			return fmt.Errorf("no such server %q", n)
		}
		if seen[n] {
			return fmt.Errorf("server %q named twice", n)
		}
		seen[n] = true
	}
	if len(names) == 0 {
		return errors.New("mcpd has no enabled servers to bridge")
	}
	// Request handlers read names and aggr without the lock once the
	// bridge is up; listens and subscription events may read them before.
	b.mu.Lock()
	b.names = names
	b.aggr = len(names) > 1 || all
	b.mu.Unlock()
	return nil
}

// describe learns each server's capabilities, serverInfo and instructions
// from mcpd's status, starting servers that are not running yet (a list
// call starts a server lazily; an operator's explicit stop is respected).
func (b *bridge) describe(ctx context.Context) error {
	st, err := b.client.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return b.c.rpcError(ctx, err, "")
	}
	byName := map[string]*mcpdv1.ServerStatus{}
	for _, s := range st.GetServers() {
		byName[s.GetName()] = s
	}
	var missing bool
	for _, n := range b.names {
		if s := byName[n]; s == nil || s.GetCapabilitiesJson() == "" {
			missing = true
			_, _ = b.client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: n, Options: b.c.callOptions()})
		}
	}
	if missing {
		if st, err = b.client.ListServers(ctx, &mcpdv1.ListServersRequest{}); err != nil {
			return b.c.rpcError(ctx, err, "")
		}
		for _, s := range st.GetServers() {
			byName[s.GetName()] = s
		}
	}
	b.mu.Lock()
	for _, n := range b.names {
		if s := byName[n]; s != nil && s.GetCapabilitiesJson() != "" {
			b.info[n] = s
		}
	}
	b.mu.Unlock()
	return nil
}

// ready waits until the connection to mcpd is up, reconnecting at once if
// it was down; it fails with mcpdctl's "not running" error after a short
// while.
func (b *bridge) ready(ctx context.Context) error {
	if b.conn.GetState() != connectivity.Ready {
		if _, err := os.Stat(b.socket); errors.Is(err, fs.ErrNotExist) {
			return b.c.notRunning() // no need to wait: mcpd is not there
		}
	}
	ctx, cancel := context.WithTimeout(ctx, bridgeReadyTimeout)
	defer cancel()
	failures := 0
	for {
		s := b.conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			b.conn.Connect()
		case connectivity.TransientFailure:
			if failures++; failures > 2 {
				return b.c.notRunning()
			}
			b.conn.ResetConnectBackoff()
		}
		if !b.conn.WaitForStateChange(ctx, s) {
			if err := b.ctx.Err(); err != nil {
				return err
			}
			return b.c.notRunning()
		}
	}
}

// keepOpen runs stream until ctx ends: again at once after a stream that
// was established (it returned true), else after a delay that doubles from
// bridgeRetryMin up to bridgeRetryMax while mcpd stays away.
func keepOpen(ctx context.Context, stream func() (established bool)) {
	delay := bridgeRetryMin
	for ctx.Err() == nil {
		if stream() {
			delay = bridgeRetryMin
			continue
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		delay = min(delay*2, bridgeRetryMax)
	}
}

// dispatch handles one line of the host; for a subscriptions/listen it
// returns a channel closed once the listen is in place.
func (b *bridge) dispatch(ctx context.Context, line []byte) <-chan struct{} {
	var m jsonrpc.Message
	if err := json.Unmarshal(line, &m); err != nil {
		b.write(&jsonrpc.Message{ID: json.RawMessage("null"), Error: jsonrpc.Errorf(jsonrpc.CodeParseError, "parse error: %v", err)})
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
		}
		if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
			b.mu.Lock()
			cancel := b.inflight[idKey(p.RequestID)]
			b.mu.Unlock()
			if cancel != nil {
				cancel()
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
// once the listen is acknowledged, or has ended.
func (b *bridge) startRequest(ctx context.Context, m *jsonrpc.Message) <-chan struct{} {
	key := idKey(m.ID)
	rctx, cancel := context.WithCancel(ctx)
	b.mu.Lock()
	b.inflight[key] = cancel
	b.mu.Unlock()
	req := parseRequest(m)
	if m.Method == "subscriptions/listen" {
		req.acked = make(chan struct{})
	}
	b.reqs.Go(func() {
		defer func() {
			b.mu.Lock()
			delete(b.inflight, key)
			b.mu.Unlock()
			cancel()
			req.ack()
		}()
		result, rerr := b.handle(rctx, req)
		if rctx.Err() != nil && !req.answerOnCancel {
			return // cancelled by the host, or the bridge is exiting
		}
		if rerr != nil {
			b.write(&jsonrpc.Message{ID: m.ID, Error: rerr})
			return
		}
		b.write(&jsonrpc.Message{ID: m.ID, Result: result})
	})
	return req.acked
}

func idKey(raw json.RawMessage) string {
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
	b.write(&jsonrpc.Message{ID: id, Method: method, Params: params})
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
		b.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "cancelled by the server"})
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
}

// rpcToMCP turns a gRPC failure into the JSON-RPC error the host sees.
func (b *bridge) rpcToMCP(ctx context.Context, err error, server string) *jsonrpc.Error {
	if ctx.Err() != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable:
		if b.conn.GetState() != connectivity.Ready {
			return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", b.c.notRunning().Error())
		}
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q is unavailable: %s", server, st.Message())
	case codes.NotFound:
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%s", st.Message())
	case codes.InvalidArgument:
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%s", st.Message())
	case codes.DeadlineExceeded:
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q: request timed out", server)
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "mcpd: %s", st.Message())
}

// clientInfoProto is the host's identity for mcpd.
func clientInfoProto(info json.RawMessage) *mcpdv1.ClientInfo {
	var ci struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.Unmarshal(info, &ci) != nil || ci.Name == "" {
		return &mcpdv1.ClientInfo{Name: "mcpdctl-bridge", Version: version.Version}
	}
	return &mcpdv1.ClientInfo{Name: ci.Name + " (mcpdctl bridge)", Version: ci.Version}
}
