// Package fakemcp is a fake MCP server for tests: a test binary re-executes
// itself with MCPD_FAKE set, and Main turns that process into a scriptable
// stdio MCP server (modern, legacy or dual-era, with misbehaviours on demand).
//
// Use it from any package's TestMain:
//
//	func TestMain(m *testing.M) {
//		fakemcp.Main() // exits the process when MCPD_FAKE is set
//		goleak.VerifyTestMain(m)
//	}
//
// and spawn the fake with
//
//	cmd, args := fakemcp.Command()
//	env := fakemcp.Env("legacy,garbage")
//
// Modes (MCPD_FAKE, comma-separated flags):
//
//	modern       server/discover, every request must carry the modern _meta
//	             envelope (-32602 otherwise), results carry resultType/ttlMs/cacheScope
//	legacy       server/discover → -32601, initialize required first, ping answered
//	dual         both eras on one process (the default when no era flag is given)
//	silentprobe  legacy, never answers any request before initialize
//	exitonprobe  legacy, exits (status 1) on server/discover
//	hanginit     never answers initialize
//	crashonstart writes to stderr and exits 3 at once
//	garbage      a banner, non-JSON, array, scalar, CRLF and one oversize line on
//	             stdout (the oversize line is MCPD_FAKE_OVERSIZE bytes, default
//	             1 MiB + 1), and junk lines around every answer
//	quiet        no "recv <method>" lines on stderr
//	ignorestdin  keep running after stdin EOF (until a signal)
//	ignoreterm   ignore SIGTERM
//	exitonsubscribe  exits (status 4) on every resources/subscribe
//	(tool stallstdin makes any mode stop reading its stdin, staying alive)
//	templates    lists the resource template GreetingTemplate (its resources
//	             are readable), declares completions and answers
//	             completion/complete for its "name" argument and the prompt
//	             greet's (templates.go)
//	toolsonly    declares the tools capability only (and still answers the
//	             other lists, as a careless server might)
//	readall      lists no resources and answers a read of any URI with the
//	             text "read anything: URI", as a careless server might
//	skills       serves skills (SEP-2640) named after EnvName (skills.go)
//	tasks        declares tasks in both eras; tool start_task answers with
//	             a task, tool task_status changes one and announces it
//	             a task (tasks.go)
//	tasksuite    the tasks extension (SEP-2663) as the conformance suite's
//	             tasks-* scenarios want it: tools greet, slow_compute,
//	             failing_job, protocol_error_job, confirm_delete, multi_input,
//	             test_tool_with_task (tasksuite.go)
//	rootsatinit  legacy: on initialize, first sends roots/list to the client
//	             (a request tied to no call) and answers initialize once
//	             that is answered (tool initroots returns the answer)
//
// Every message received is counted (tool "stats") and, unless quiet, logged
// to stderr as "recv <method> <id>" for a request, "recv <method>" for a
// notification, "recv response <id>" for an answer to the fake's own request. Every
// notifications/cancelled is logged as "cancelled <requestId>" and the
// cancelled request is not answered (a subscriptions/listen still gets its
// closing result, as the Go SDK does).
//
// Tools are listed in the tools table in tools.go. There is also a resource
// fake://hello and a prompt greet.
package fakemcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/pollio"
)

// Environment variables read by the fake.
const (
	// EnvMode selects the fake and its flags, e.g. "legacy,garbage".
	EnvMode = "MCPD_FAKE"
	// EnvVersions is a comma-separated list of the modern server's
	// supportedVersions. Default "2026-07-28,2025-11-25".
	EnvVersions = "MCPD_FAKE_VERSIONS"
	// EnvTTL is the ttlMs of cacheable modern results. Default 60000.
	EnvTTL = "MCPD_FAKE_TTL_MS"
	// EnvOversize is the size of the garbage mode's oversize line in bytes.
	EnvOversize = "MCPD_FAKE_OVERSIZE"
	// EnvCrashWhile names a file: while it exists the fake crashes on
	// start as with the crashonstart flag.
	EnvCrashWhile = "MCPD_FAKE_CRASH_WHILE"
	// EnvListDelay delays every tools/list answer by this many
	// milliseconds (a cancellation still ends it at once). Default 0.
	EnvListDelay = "MCPD_FAKE_LIST_DELAY_MS"
	// EnvListDelayWhile names a file: with it set, EnvListDelay applies
	// only while that file exists.
	EnvListDelayWhile = "MCPD_FAKE_LIST_DELAY_WHILE"
	// EnvStartDelay makes the fake wait this many milliseconds before it
	// reads its first message, as a server slow to start does. Default 0.
	EnvStartDelay = "MCPD_FAKE_START_DELAY_MS"
	// EnvName is the serverInfo name the fake reports. Default "fakemcp".
	EnvName = "MCPD_FAKE_NAME"
	// EnvStderr is a line the fake writes to stderr as it starts, after
	// its "started" line. Default none.
	EnvStderr = "MCPD_FAKE_STDERR"
	// EnvHTTP, when set, makes the fake serve stateless Streamable HTTP
	// on this address (POST /mcp, modern requests only) instead of stdio
	// (http.go).
	EnvHTTP = "MCPD_FAKE_HTTP"
)

// Default values of the knobs above.
const (
	DefaultVersions = jsonrpc.ModernVersion + "," + jsonrpc.LegacyVersion
	DefaultTTL      = 60000
	DefaultOversize = 1<<20 + 1
)

// Main runs the fake server described by $MCPD_FAKE on os.Stdin/os.Stdout
// and exits the process; it never returns in that case. When MCPD_FAKE is
// unset it returns false at once. (The bool result lets a caller write
// `if fakemcp.Main() { return }`, which is never taken.)
func Main() bool {
	mode, ok := os.LookupEnv(EnvMode)
	if !ok || mode == "" {
		return false
	}
	if addr := os.Getenv(EnvHTTP); addr != "" {
		os.Exit(serveHTTP(mode, addr, os.Stderr))
	}
	os.Exit(run(mode, pollio.Stdin(), os.Stdout, os.Stderr)) // pollio: no 60 s stall at a GC
	return true
}

// Command returns the path of the running (test) binary and the arguments
// with which it runs no tests, so a test can spawn itself as a fake server
// (with Env).
func Command() (string, []string) {
	path, err := os.Executable()
	if err != nil {
		path = os.Args[0]
	}
	return path, []string{"-test.run=^$"}
}

// Env returns the current environment without any MCPD_FAKE* variables, plus
// MCPD_FAKE=mode and the extra "KEY=VALUE" entries.
func Env(mode string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPD_FAKE") {
			env = append(env, kv)
		}
	}
	env = append(env, EnvMode+"="+mode)
	return append(env, extra...)
}

// Exit statuses of the fake.
const (
	exitCrashOnStart = 3
	exitProbe        = 1
	exitCrashTool    = 2
	exitSubscribe    = 4
)

// errNoReply, returned by a handler, means the handler answered itself or
// must not answer.
var errNoReply = &jsonrpc.Error{Code: 0, Message: "no reply"}

// server is one fake process.
type server struct {
	flags    map[string]bool
	versions []string
	ttl      int64
	listWait time.Duration  // EnvListDelay
	info     map[string]any // serverInfo: name from EnvName
	out      io.Writer
	errw     io.Writer

	outMu sync.Mutex // guards writes to out
	// fanMu orders listens and the notifications fanned out to them: a
	// listen is registered and acknowledged under the write lock, a change
	// is fanned out (the listens read and every copy written) under the
	// read lock. So nothing is sent on a listen before its acknowledgement
	// ("nothing may be sent on that subscription before it"), and a change
	// reaches every listen acknowledged before it. (The spec allows a
	// server to interleave a change sent on older listens with a newer
	// listen's acknowledgement; mcpd copes with that too, see
	// subscriptions/cutover.go, but then repeated changes of one resource
	// may reach apps as one notice, which tests counting notices cannot
	// tell from a loss.)
	fanMu sync.RWMutex
	errMu sync.Mutex // guards writes to errw

	mu            sync.Mutex // guards the fields below
	initialized   bool
	counts        map[string]int
	cancelled     []json.RawMessage
	cancelReasons []string                         // of the notifications/cancelled in cancelled
	inflight      map[string]context.CancelFunc    // request id → cancel
	nextID        int64                            // id of the next server→client request
	seq           int64                            // requests read so far
	waiting       map[string]chan *jsonrpc.Message // server→client id → answer
	listens       map[string]json.RawMessage       // listen id → filter
	barriers      map[int]*barrier                 // outoforder groups by size
	added         []string                         // tools added by addtool (addtool.go)
	held          []chan struct{}                  // held progress calls, closed by release
	tasks         map[string]*fakeTask             // by id (tasks.go)
	suiteTasks    map[string]*suiteTask            // by id (tasksuite.go)
	suiteSeq      int                              // suite tasks created so far
	// stall is set by a stallstdin call, read by the reader after the
	// line: stop reading stdin for stallFor (zero: for good).
	stall    bool
	stallFor time.Duration
	// initRoots is the answer to the rootsatinit roots/list, as tool
	// roots reports it.
	initRoots string
}

func run(mode string, in io.Reader, out, errw io.Writer) int {
	s, code := newServer(mode, out, errw)
	if s == nil {
		return code
	}
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handleLine(line)
		}
		if err != nil {
			break
		}
		s.waitStall()
	}
	s.logf("fakemcp: stdin closed")
	if s.flags["ignorestdin"] {
		select {} // until a signal
	}
	return 0
}

// newServer sets up the fake of mode writing to out, as it starts: nil and
// the exit status when it must not run (crashonstart).
func newServer(mode string, out, errw io.Writer) (*server, int) {
	s := &server{
		flags:    map[string]bool{},
		out:      out,
		errw:     errw,
		counts:   map[string]int{},
		inflight: map[string]context.CancelFunc{},
		waiting:  map[string]chan *jsonrpc.Message{},
		listens:  map[string]json.RawMessage{},
		barriers: map[int]*barrier{},
		ttl:      DefaultTTL,
		info:     map[string]any{"name": envOr(EnvName, "fakemcp"), "version": "1.0.0"},
	}
	for _, f := range strings.Split(mode, ",") {
		s.flags[strings.TrimSpace(f)] = true
	}
	if !s.flags["modern"] && !s.flags["legacy"] && !s.flags["dual"] {
		if s.flags["silentprobe"] || s.flags["exitonprobe"] {
			s.flags["legacy"] = true
		} else {
			s.flags["dual"] = true
		}
	}
	s.versions = strings.Split(envOr(EnvVersions, DefaultVersions), ",")
	if v, err := strconv.ParseInt(os.Getenv(EnvTTL), 10, 64); err == nil {
		s.ttl = v
	}
	if v, err := strconv.ParseInt(os.Getenv(EnvListDelay), 10, 64); err == nil {
		s.listWait = time.Duration(v) * time.Millisecond
	}

	if v, err := strconv.ParseInt(os.Getenv(EnvStartDelay), 10, 64); err == nil {
		time.Sleep(time.Duration(v) * time.Millisecond)
	}
	if s.flags["crashonstart"] || fileExists(os.Getenv(EnvCrashWhile)) {
		fmt.Fprintln(errw, "fakemcp: crash on start")
		return nil, exitCrashOnStart
	}
	if s.flags["ignoreterm"] {
		signal.Ignore(syscall.SIGTERM)
	}
	if s.flags["garbage"] {
		size := DefaultOversize
		if v, err := strconv.Atoi(os.Getenv(EnvOversize)); err == nil {
			size = v
		}
		s.writeRaw([]byte("fakemcp banner: starting up (not JSON)\n"))
		s.writeRaw([]byte("[1,2,3]\n\"a string\"\n42\n\n"))
		s.writeRaw(append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), size)...), "\"}\n"...))
	}
	s.logf("fakemcp: started mode=%s", mode)
	if line := os.Getenv(EnvStderr); line != "" {
		s.errLine(line)
	}
	return s, 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (s *server) handleLine(line []byte) {
	var msg jsonrpc.Message
	if err := json.Unmarshal(line, &msg); err != nil {
		s.logf("fakemcp: bad line: %v", err)
		return
	}
	switch {
	case msg.Method != "" && msg.ID != nil:
		s.count(msg.Method, msg.ID)
		s.startRequest(&msg)
	case msg.Method != "":
		s.count(msg.Method, nil)
		s.handleNotification(&msg)
	case msg.ID != nil:
		s.count("response", nil)
		s.logf("recv response %s", msg.ID)
		s.mu.Lock()
		ch := s.waiting[string(msg.ID)]
		delete(s.waiting, string(msg.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- &msg
		}
	}
}

// count counts a received message and logs "recv <method>" for a
// notification, "recv <method> <id>" for a request.
func (s *server) count(method string, id json.RawMessage) {
	s.mu.Lock()
	s.counts[method]++
	s.mu.Unlock()
	switch {
	case method == "response":
	case id != nil:
		s.logf("recv %s %s", method, compact(id))
	default:
		s.logf("recv %s", method)
	}
}

func (s *server) handleNotification(msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/initialized":
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || p.RequestID == nil {
			return
		}
		id := compact(p.RequestID)
		s.mu.Lock()
		s.cancelled = append(s.cancelled, id)
		s.cancelReasons = append(s.cancelReasons, p.Reason)
		cancel := s.inflight[string(id)]
		s.mu.Unlock()
		s.errLine("cancelled " + string(id))
		if cancel != nil {
			cancel()
		}
	}
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// req is one request being handled.
type req struct {
	ctx    context.Context
	id     json.RawMessage
	method string
	params map[string]json.RawMessage
	meta   map[string]json.RawMessage
	modern bool
	seq    int64 // order in which requests were read
}

// startRequest decides synchronously what must be decided in order (the
// handshake state) and runs everything else concurrently, so answers can
// arrive out of order.
func (s *server) startRequest(msg *jsonrpc.Message) {
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	r := &req{id: compact(msg.ID), method: msg.Method, params: map[string]json.RawMessage{}, seq: seq}
	if len(msg.Params) > 0 && json.Unmarshal(msg.Params, &r.params) != nil {
		s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params must be an object"))
		return
	}
	if m := r.params["_meta"]; m != nil {
		_ = json.Unmarshal(m, &r.meta)
	}
	_, r.modern = r.meta[jsonrpc.MetaProtocolVersion]

	s.mu.Lock()
	initialized := s.initialized
	s.mu.Unlock()

	if msg.Method == "server/discover" && s.flags["exitonprobe"] {
		s.errLine("fakemcp: exit on probe")
		os.Exit(exitProbe)
	}
	if s.flags["silentprobe"] && !initialized && msg.Method != "initialize" {
		return
	}
	switch {
	case s.flags["modern"]:
		if rerr := s.checkEnvelope(r); rerr != nil {
			s.reply(r, nil, rerr)
			return
		}
		r.modern = true
	case s.flags["legacy"]:
		r.modern = false
	default: // dual: a request with the modern envelope is served statelessly
		if r.modern {
			if rerr := s.checkEnvelope(r); rerr != nil {
				s.reply(r, nil, rerr)
				return
			}
		}
	}
	if !r.modern {
		switch {
		case msg.Method == "server/discover":
			s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found"))
			return
		case msg.Method == "initialize" && s.flags["hanginit"]:
			return
		case msg.Method == "initialize" && s.flags["rootsatinit"]:
			// Asked before the handshake ends, so no call can be in flight;
			// the reader reads on meanwhile (the answer comes through it).
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				m, err := s.request(ctx, "roots/list", nil, nil)
				got := "error: no answer"
				if err == nil {
					got = answerText(m)
				}
				s.mu.Lock()
				s.initRoots = got
				s.mu.Unlock()
				s.initialize(r)
			}()
			return
		case msg.Method == "initialize":
			s.initialize(r)
			return
		case msg.Method != "ping" && !initialized:
			s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "server not initialized"))
			return
		}
	}

	s.noteStall(r) // before the reader reads on (tools.go)
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx = ctx
	s.mu.Lock()
	s.inflight[string(r.id)] = cancel
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, string(r.id))
			s.mu.Unlock()
			cancel()
		}()
		result, rerr := s.dispatch(r)
		if rerr == errNoReply {
			return
		}
		if ctx.Err() != nil && r.method != "subscriptions/listen" {
			return // "Receivers ... SHOULD NOT send a response for the cancelled request."
		}
		s.reply(r, result, rerr)
	}()
}

// checkEnvelope validates the modern _meta envelope: "Missing a required key
// ⇒ malformed ⇒ server must answer -32602".
func (s *server) checkEnvelope(r *req) *jsonrpc.Error {
	var version string
	if json.Unmarshal(r.meta[jsonrpc.MetaProtocolVersion], &version) != nil || version == "" {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing or invalid _meta field %q", jsonrpc.MetaProtocolVersion)
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(r.meta[jsonrpc.MetaClientCapabilities], &caps) != nil || caps == nil {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing or invalid _meta field %q", jsonrpc.MetaClientCapabilities)
	}
	if !slices.Contains(s.versions, version) || version < "2026" {
		return jsonrpc.UnsupportedVersion(version, s.versions)
	}
	return nil
}

var capabilities = map[string]any{
	"tools":     map[string]any{"listChanged": true},
	"prompts":   map[string]any{"listChanged": true},
	"resources": map[string]any{"subscribe": true, "listChanged": true},
	"logging":   map[string]any{},
}

const instructions = "fakemcp is a fake MCP server for tests"

func (s *server) initialize(r *req) {
	var version string
	_ = json.Unmarshal(r.params["protocolVersion"], &version)
	if version == "" {
		s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "protocolVersion required"))
		return
	}
	if !slices.Contains(jsonrpc.LegacyVersions(), version) {
		version = jsonrpc.LegacyVersion
	}
	s.mu.Lock()
	s.initialized = true
	s.mu.Unlock()
	s.reply(r, map[string]any{
		"protocolVersion": version,
		"capabilities":    s.caps(),
		"serverInfo":      s.info,
		"instructions":    instructions,
	}, nil)
}

// dispatch serves one request after the era checks.
func (s *server) dispatch(r *req) (map[string]any, *jsonrpc.Error) {
	cacheable := func(m map[string]any) map[string]any {
		if r.modern {
			m["ttlMs"] = s.ttl
			m["cacheScope"] = "public"
		}
		return m
	}
	if result, rerr, ok := s.templates(r, cacheable); ok {
		return result, rerr
	}
	if result, rerr, ok := s.skillsRequest(r, cacheable); ok {
		return result, rerr
	}
	if result, rerr, ok := s.taskSuite(r); ok {
		return result, rerr
	}
	if result, rerr, ok := s.tasksRequest(r); ok {
		return result, rerr
	}
	switch r.method {
	case "ping":
		return map[string]any{}, nil
	case "server/discover":
		return cacheable(map[string]any{
			"supportedVersions": s.versions,
			"capabilities":      s.caps(),
			"instructions":      instructions,
		}), nil
	case "tools/list":
		if s.listWait > 0 && (os.Getenv(EnvListDelayWhile) == "" || fileExists(os.Getenv(EnvListDelayWhile))) {
			select {
			case <-time.After(s.listWait):
			case <-r.ctx.Done():
				return nil, errNoReply
			}
		}
		list := make([]map[string]any, 0, len(tools))
		for _, t := range tools {
			list = append(list, map[string]any{
				"name": t.name, "description": describe(t.name, t.description), // descfile.go
				"inputSchema": map[string]any{"type": "object"},
			})
		}
		list = append(list, s.addedTools()...)
		if s.flags["tasksuite"] {
			list = append(list, suiteToolList()...)
		}
		if s.flags["tasks"] {
			list = append(list, map[string]any{"name": "start_task", "description": "starts a task (tasks.go)",
				"inputSchema": map[string]any{"type": "object"}, "execution": map[string]any{"taskSupport": "optional"}},
				map[string]any{"name": "task_status", "description": taskStatusDescription, "inputSchema": map[string]any{"type": "object"}})
		}
		return cacheable(map[string]any{"tools": list}), nil
	case "tools/call":
		return s.callTool(r)
	case "resources/list":
		if s.flags["readall"] {
			return cacheable(map[string]any{"resources": []any{}}), nil
		}
		return cacheable(map[string]any{"resources": []any{
			map[string]any{"uri": "fake://hello", "name": "hello", "mimeType": "text/plain"},
		}}), nil
	case "resources/templates/list":
		return cacheable(map[string]any{"resourceTemplates": []any{}}), nil
	case "resources/read":
		var uri string
		_ = json.Unmarshal(r.params["uri"], &uri)
		if s.flags["readall"] {
			return cacheable(map[string]any{"contents": []any{
				map[string]any{"uri": uri, "mimeType": "text/plain", "text": "read anything: " + uri},
			}}), nil
		}
		if uri != "fake://hello" {
			return nil, jsonrpc.WithData(jsonrpc.CodeInvalidParams, "Resource not found", map[string]any{"uri": uri})
		}
		return cacheable(map[string]any{"contents": []any{
			map[string]any{"uri": uri, "mimeType": "text/plain", "text": "hello"},
		}}), nil
	case "resources/subscribe", "resources/unsubscribe":
		if r.modern {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %q", r.method)
		}
		if r.method == "resources/subscribe" && s.flags["exitonsubscribe"] {
			s.errLine("fakemcp: exit on subscribe")
			os.Exit(exitSubscribe)
		}
		return map[string]any{}, nil
	case "prompts/list":
		return cacheable(map[string]any{"prompts": []any{
			map[string]any{"name": "greet", "description": "greets someone",
				"arguments": []any{map[string]any{"name": "name", "required": false}}},
		}}), nil
	case "prompts/get":
		var name string
		_ = json.Unmarshal(r.params["name"], &name)
		if name != "greet" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown prompt %q", name)
		}
		var args struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(r.params["arguments"], &args)
		if args.Name == "" {
			args.Name = "world"
		}
		return map[string]any{"messages": []any{map[string]any{
			"role": "user", "content": textContent("hello " + args.Name),
		}}}, nil
	case "subscriptions/listen":
		if !r.modern {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")
		}
		return s.listen(r)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %q", r.method)
}

// listen acknowledges the filter, then holds the request open until it is
// cancelled and closes it with a tagged success result.
func (s *server) listen(r *req) (map[string]any, *jsonrpc.Error) {
	var filter json.RawMessage = []byte("{}")
	if f := r.params["notifications"]; f != nil {
		filter = f
	}
	s.fanMu.Lock()
	s.mu.Lock()
	s.listens[string(r.id)] = filter
	s.mu.Unlock()
	s.notify("notifications/subscriptions/acknowledged", map[string]any{
		"_meta":         map[string]any{jsonrpc.MetaSubscriptionID: r.id},
		"notifications": filter,
	})
	s.fanMu.Unlock()
	<-r.ctx.Done()
	s.mu.Lock()
	delete(s.listens, string(r.id))
	s.mu.Unlock()
	return map[string]any{"_meta": map[string]any{jsonrpc.MetaSubscriptionID: r.id}}, nil
}
