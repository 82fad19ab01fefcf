package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// HTTPOptions configure an HTTPHandler.
type HTTPOptions struct {
	Timeout     time.Duration                                             // per forwarded request; 0 = none
	MaxBody     int64                                                     // largest POST body in bytes; 0 = DefaultMaxLine
	Warnf       func(format string, args ...any)                          // operator warnings; nil = discard
	CallOptions func() service.Options                                    // nil = none
	RPCError    func(ctx context.Context, err error, server string) error // nil = be.Error
	Name        string                                                    // serverInfo name of an endpoint of several servers; "" = DefaultName
	// SessionIdle is how long a legacy session may go without a GET
	// stream open and without a request before its host counts as gone
	// and the session ends with its subscriptions. If zero,
	// DefaultSessionIdle is used.
	SessionIdle time.Duration
	// LocalClock: mcpd runs in this process (Options.LocalClock).
	LocalClock bool
}

// DefaultSessionIdle is HTTPOptions.SessionIdle's default. A live host
// either keeps its GET stream open or sends requests; one that exits
// without DELETE does neither, and its session (its app in status, its
// subscriptions) goes within about this long.
const DefaultSessionIdle = 2 * time.Minute

// Session limits of the legacy era.
const (
	defaultMaxSessions = 256
	// sessionQueue bounds the unsolicited messages kept for a session
	// while it has no GET stream open.
	sessionQueue = 1024
)

// HTTPHandler serves the bridge over Streamable HTTP in both eras
// (the Streamable HTTP transport of each): /mcp serves every enabled server as one,
// /servers/NAME/mcp one server, /profiles/NAME/mcp the servers of a
// profile as one, under it. A legacy host's initialize starts a
// session, a bridge of its own; modern requests are stateless and share
// one bridge per endpoint, or per host of it (HostCallers).
type HTTPHandler struct {
	be          Backend
	opts        HTTPOptions
	life        context.Context
	stop        context.CancelFunc
	wg          sync.WaitGroup // the janitor
	serving     gate           // ServeHTTP calls in progress
	idle        time.Duration  // a session without GET stream nor request this long ends
	maxSessions int

	mu       sync.Mutex // guards the fields below
	closed   bool
	sessions map[string]*session
	shared   map[modernKey]*sharedBridge
	known    map[endpoint]bool // endpoints whose profile and server mcpd listed
}

// NewHTTPHandler makes the handler; Close ends it.
func NewHTTPHandler(be Backend, opts HTTPOptions) *HTTPHandler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxLine
	}
	if opts.Warnf == nil {
		opts.Warnf = func(string, ...any) {}
	}
	if opts.CallOptions == nil {
		opts.CallOptions = func() service.Options { return service.Options{} }
	}
	if opts.RPCError == nil {
		opts.RPCError = func(ctx context.Context, err error, server string) error { return backendError(ctx, be, err, server) }
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	life, stop := context.WithCancel(context.Background())
	h := &HTTPHandler{
		be: be, opts: opts, life: life, stop: stop,
		idle: opts.SessionIdle, maxSessions: defaultMaxSessions,
		sessions: map[string]*session{}, shared: map[modernKey]*sharedBridge{}, known: map[endpoint]bool{},
	}
	h.wg.Go(h.janitor)
	return h
}

// Close ends every session and open stream and waits for all goroutines.
func (h *HTTPHandler) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.stop()
	h.serving.close()
	h.mu.Lock()
	sessions, shared := h.sessions, h.shared
	h.sessions, h.shared = map[string]*session{}, map[modernKey]*sharedBridge{}
	h.mu.Unlock()
	for _, s := range sessions {
		s.end()
	}
	for _, sb := range shared {
		sb.end()
	}
	h.wg.Wait()
}

// bridgeOptions are the options of a bridge for endpoint ep.
func (h *HTTPHandler) bridgeOptions(ep endpoint) Options {
	o := Options{
		All: ep.server == "", Timeout: h.opts.Timeout, MaxLine: int(min(h.opts.MaxBody, 1<<31-1)),
		Warnf: h.opts.Warnf, RPCError: h.opts.RPCError, CallOptions: h.opts.CallOptions,
		Profile: ep.profile, Root: ep.root, Name: h.opts.Name, plainClient: true, byHandler: true,
		LocalClock: h.opts.LocalClock,
	}
	if ep.server != "" {
		o.Names = []string{ep.server}
	}
	return o
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.serving.enter() {
		writeError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInternalError, "the MCP endpoint is shutting down")
		return
	}
	defer h.serving.leave()
	ep, ok := endpointOf(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("no MCP endpoint at %s: use /mcp (every server), /servers/NAME/mcp (one server) or /profiles/NAME/mcp (a profile's servers)", r.URL.Path))
		return
	}
	if ep.root, ok = rootOf(w, r); !ok {
		return
	}
	if ep != (endpoint{}) && !h.checkEndpoint(w, r, ep) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, ep)
	case http.MethodGet:
		h.get(w, r, ep)
	case http.MethodDelete:
		h.delete(w, r, ep)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("method %s not allowed: POST a JSON-RPC message (GET and DELETE serve legacy sessions)", r.Method))
	}
}

// endpoint is what an MCP endpoint serves: every server (the zero
// endpoint), one server, or a profile's servers, in a workspace root or
// none.
type endpoint struct {
	profile, server string
	root            string // ?root=: the workspace root of every call; "" for none
}

// path is the endpoint's URL path, with its root query.
func (ep endpoint) path() string {
	var p string
	switch {
	case ep.server != "":
		p = "/servers/" + ep.server + "/mcp"
	case ep.profile != "":
		p = "/profiles/" + ep.profile + "/mcp"
	default:
		p = "/mcp"
	}
	if ep.root != "" {
		p += "?" + url.Values{rootParam: {ep.root}}.Encode()
	}
	return p
}

// rootParam is the URL query parameter naming the workspace root of a
// session, as mcpdctl bridge --root does: a server with share "root" runs
// its instance for that root, started in it.
const rootParam = "root"

// rootOf is the workspace root r's URL names ("" for none); a bad one is
// answered 400 and reported false.
func rootOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	vs, named := q[rootParam]
	switch {
	case !named:
		return "", true
	case err != nil:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid query %q: %v", r.URL.RawQuery, err))
	case len(vs) > 1:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "invalid root: name one workspace root, not several")
	case !filepath.IsAbs(vs[0]) || filepath.Clean(vs[0]) != vs[0]:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("invalid root %q: want an absolute, clean directory path, URL-escaped, such as ?root=%%2Fhome%%2Fme%%2Fproject", vs[0]))
	default:
		return vs[0], true
	}
	return "", false
}

// endpointOf parses an endpoint path: /mcp, /servers/NAME/mcp or
// /profiles/NAME/mcp.
func endpointOf(path string) (endpoint, bool) {
	if path == "/mcp" {
		return endpoint{}, true
	}
	for _, p := range []string{"/servers/", "/profiles/"} {
		name, ok := strings.CutPrefix(path, p)
		if !ok {
			continue
		}
		name, ok = strings.CutSuffix(name, "/mcp")
		if !ok || name == "" || strings.Contains(name, "/") {
			return endpoint{}, false
		}
		if p == "/profiles/" {
			return endpoint{profile: name}, true
		}
		return endpoint{server: name}, true
	}
	return endpoint{}, false
}

// checkEndpoint answers 404 for a server or profile mcpd does not know.
// While mcpd is unreachable every name is let through: its bridge answers
// why.
func (h *HTTPHandler) checkEndpoint(w http.ResponseWriter, r *http.Request, ep endpoint) bool {
	ep.root = "" // names are known in every root
	h.mu.Lock()
	known := h.known[ep]
	h.mu.Unlock()
	if known {
		return true
	}
	resp, err := h.be.ListServers(WithProfile(r.Context(), ep.profile))
	if ep.profile != "" && service.CodeOf(err) == service.NotFound {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, err.Error())
		return false
	}
	if err != nil {
		return true
	}
	var names []string
	for _, s := range resp.Servers {
		names = append(names, s.Name)
	}
	if ep.server == "" || slices.Contains(names, ep.server) {
		h.mu.Lock()
		h.known[ep] = true
		h.mu.Unlock()
		return true
	}
	msg := fmt.Sprintf("no such server %q", ep.server)
	if c := config.Closest(ep.server, names, 3); c != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, msg)
	return false
}

// post serves one POSTed JSON-RPC message.
func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request, ep endpoint) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	m, err := jsonrpc.DecodeValidMessage(body) // readBody checked it is JSON
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, `invalid request: the body must be one JSON-RPC 2.0 message object with "jsonrpc": "2.0"`)
		return
	}
	if bad := jsonrpc.CheckIncoming(&m, body); bad != nil {
		writeErr(w, http.StatusBadRequest, jsonrpc.AnswerID(&m), bad)
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	sid := r.Header.Get(hdrSessionID)
	hv, _, _ := headerValue(r.Header, hdrProtocolVersion)
	modernHeader := slices.Contains(jsonrpc.ModernVersions(), hv)
	if hv != "" && !modernHeader && !slices.Contains(jsonrpc.SupportedVersions(), hv) {
		// The error's data lists the supported versions and echoes the
		// requested one, as for an unsupported version in _meta.
		e := jsonrpc.UnsupportedVersion(hv, jsonrpc.SupportedVersions())
		e.Message = fmt.Sprintf("unsupported %s header %q (supported: %s)", hdrProtocolVersion, hv, strings.Join(jsonrpc.SupportedVersions(), ", "))
		writeErr(w, http.StatusBadRequest, idOrNil(m.ID, hasID), e)
		return
	}
	switch {
	case m.Method != "" && hasID:
		hr := parseRequest(&m)
		if hr.modern || (modernHeader && m.Method != "initialize") {
			h.serveModern(w, r, ep, hr)
			return
		}
		if m.Method == "initialize" && sid == "" {
			h.startSession(w, r, ep, hr)
			return
		}
		s := h.session(w, sid, ep, hr.id)
		switch {
		case s == nil:
		case m.Method == "initialize":
			// "initialize … MUST be the first interaction": the session had it.
			writeError(w, http.StatusBadRequest, hr.id, jsonrpc.CodeInvalidRequest,
				"invalid request: this session is initialized already; start a new session with an initialize that has no Mcp-Session-Id header")
		default:
			s.serveRequest(w, r, hr)
		}
	case m.Method == "" && !hasID:
		writeError(w, http.StatusBadRequest, idOrNil(m.ID, false), jsonrpc.CodeInvalidRequest, "invalid request: a message has a method (request, notification) or an id (response)")
	case sid == "" && (modernHeader || m.Method != ""):
		if m.Method == "" {
			writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "invalid request: clients do not send JSON-RPC responses in protocol version "+jsonrpc.ModernVersion)
			return
		}
		if !modernHeader {
			// A legacy notification belongs to a session.
			writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
				"missing Mcp-Session-Id header: a 2025-11-25 notification belongs to the session initialize started")
			return
		}
		w.WriteHeader(http.StatusAccepted) // a modern notification: nothing to do
	default: // a legacy notification, or an answer to a request of the bridge
		if s := h.session(w, sid, ep, nil); s != nil {
			s.deliver(w, body)
		}
	}
}

// readBody checks the Content-Type and Accept of a POST and reads its body,
// answering the host itself when it cannot be served.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if !isJSONType(r.Header.Get("Content-Type")) {
		writeError(w, http.StatusUnsupportedMediaType, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("unsupported Content-Type %q: POST a JSON-RPC message as application/json", r.Header.Get("Content-Type")))
		return nil, false
	}
	// "The client MUST include an Accept header, listing both
	// application/json and text/event-stream": the answer is either.
	if !accepts(r.Header.Values("Accept"), "application/json") || !accepts(r.Header.Values("Accept"), "text/event-stream") {
		writeError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest,
			"not acceptable: the client must accept application/json and text/event-stream")
		return nil, false
	}
	tooLarge := func() {
		writeError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("message too large: this endpoint accepts bodies of up to %d bytes", h.opts.MaxBody))
	}
	if r.ContentLength > h.opts.MaxBody {
		tooLarge()
		return nil, false
	}
	raw, err := readAllSized(http.MaxBytesReader(w, r.Body, h.opts.MaxBody), r.ContentLength)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		tooLarge()
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, fmt.Sprintf("read request body: %v", err))
		return nil, false
	}
	body := bytes.TrimSpace(raw)
	switch {
	case len(body) > 0 && body[0] == '[':
		writeErr(w, http.StatusBadRequest, nil, jsonrpc.BatchError())
		return nil, false
	case !jsonrpc.Valid(body):
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "parse error: the body is not valid JSON: "+syntaxError(body))
		return nil, false
	}
	return body, true
}

// syntaxError says where and why body, which is not valid JSON, is not
// (a truncated body, a bad byte, nesting deeper than 10000 levels).
func syntaxError(body []byte) string {
	err := json.Unmarshal(body, new(json.RawMessage)) // scans only: nothing is built
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "invalid"
}

// isJSONType reports whether Content-Type value ct is application/json
// (with any parameters).
func isJSONType(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// accepts reports whether the Accept header values allow media type mt;
// a missing Accept allows everything.
func accepts(values []string, mt string) bool {
	if len(values) == 0 {
		return true
	}
	major, _, _ := strings.Cut(mt, "/")
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			t, params, _ := strings.Cut(part, ";")
			t = strings.ToLower(strings.TrimSpace(t))
			if (t == mt || t == "*/*" || t == major+"/*") && !refused(params) {
				return true
			}
		}
	}
	return false
}

// refused reports whether the parameters of an Accept entry say q=0 ("not
// acceptable").
func refused(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}

// idOrNil is id for an error answer: null unless the request's id is known.
func idOrNil(id json.RawMessage, known bool) json.RawMessage {
	if !known {
		return nil
	}
	return id
}

// writeError answers with a JSON-RPC error (id null when nil).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	writeErr(w, status, id, &jsonrpc.Error{Code: code, Message: msg})
}

func writeErr(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := appendMessage(nil, &jsonrpc.Message{ID: id, Error: e})
	if err != nil {
		http.Error(w, e.Message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// requestContext is the context of one HTTP request that is no host
// request in flight (a legacy session's GET stream), whose own is rctx,
// served by a bridge of life: it ends when the client goes away or life
// ends. A host request's ends through its in-flight entry (prepareRequest,
// endInflight).
func requestContext(rctx, life context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(rctx)
	stop := context.AfterFunc(life, cancel)
	return ctx, func() { stop(); cancel() }
}

// gate counts the users of something that closes: once closed, enter
// fails and close waits for those inside.
type gate struct {
	mu     sync.Mutex // guards closed and the Add calls of wg
	closed bool
	wg     sync.WaitGroup
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *gate) leave() { g.wg.Done() }

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// readAllSized reads r to its end. A body of known size (n > 0) is read
// into a buffer of exactly that size: a bytes.Buffer or io.ReadAll grows by
// doubling, and one growth near the end would cost a large body its size
// twice more. The body is the caller's, never reused.
func readAllSized(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 {
		var buf bytes.Buffer
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("body shorter than its Content-Length of %d bytes", n)
		}
		return nil, err
	}
	// The server reads no further than Content-Length, so the next read
	// is the end (or the MaxBytesError of a limit below it).
	var extra [1]byte
	if k, err := r.Read(extra[:]); k > 0 || err != nil && !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("body longer than its Content-Length")
		}
		return nil, err
	}
	return body, nil
}
