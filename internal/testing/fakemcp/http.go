package fakemcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// With EnvHTTP the fake serves stateless Streamable HTTP of the modern era:
// each POST to /mcp carries one request (or notification), answered with
// one application/json response. The request goes through the same server
// as a stdio line (under an id of the fake's own), so every mode flag means
// the same. Before that the standard headers are checked as the transport
// asks (SEP-2243): MCP-Protocol-Version present and equal to the body's
// _meta protocolVersion, Mcp-Method equal to the method, and Mcp-Name equal
// to params.name (tools/call, prompts/get), params.uri (resources/read) or
// params.taskId (tasks/get, tasks/update, tasks/cancel); else HTTP 400 with
// -32020. A Host or Origin other than localhost, 127.0.0.1 or [::1] is
// refused with 403 (DNS rebinding). Messages the fake sends outside
// responses (notifications, its own requests) are dropped.

// codeHeaderMismatch is the transport's HeaderMismatch error code.
const codeHeaderMismatch = -32020

// demux is the out of an HTTP fake: it hands each response line to the
// request waiting for its id.
type demux struct {
	mu      sync.Mutex
	next    int64
	waiting map[string]chan []byte // compact JSON id → its response
}

func (d *demux) Write(b []byte) (int, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(bytes.TrimSpace(b), &m) == nil && m.ID != nil && m.Method == "" {
		d.mu.Lock()
		ch := d.waiting[string(compact(m.ID))]
		delete(d.waiting, string(compact(m.ID)))
		d.mu.Unlock()
		if ch != nil {
			ch <- bytes.Clone(b)
		}
	}
	return len(b), nil
}

// expect registers a fresh id and returns it with the channel of its answer.
func (d *demux) expect() (json.RawMessage, chan []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	id := json.RawMessage(strconv.Quote(fmt.Sprintf("http-%d", d.next)))
	ch := make(chan []byte, 1)
	d.waiting[string(id)] = ch
	return id, ch
}

func (d *demux) forget(id json.RawMessage) {
	d.mu.Lock()
	delete(d.waiting, string(id))
	d.mu.Unlock()
}

// serveHTTP runs the fake of mode on HTTP at addr until the process ends.
func serveHTTP(mode, addr string, errw io.Writer) int {
	d := &demux{waiting: map[string]chan []byte{}}
	s, code := newServer(mode, d, errw)
	if s == nil {
		return code
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		s.errLine("fakemcp: " + err.Error())
		return 1
	}
	s.logf("fakemcp: serving http://%s/mcp", l.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, hr *http.Request) { s.serveHTTPRequest(d, w, hr) })
	err = http.Serve(l, mux)
	s.errLine("fakemcp: " + err.Error())
	return 1
}

func writeHTTPError(w http.ResponseWriter, status int, id json.RawMessage, rerr *jsonrpc.Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": jsonrpc.Version, "id": id, "error": rerr})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// localHost reports whether host (a Host header or URL host, with or
// without port) is a loopback name.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// headerText is the header's value without surrounding whitespace, decoded
// when it has the =?base64?…?= form; ok is false when absent or undecodable.
func headerText(h http.Header, name string) (string, bool) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return "", false
	}
	v := strings.TrimSpace(vals[0])
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		dec, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-len("?=")])
		return string(dec), err == nil
	}
	return v, true
}

// checkHeaders checks the standard headers of a modern request.
func checkHeaders(h http.Header, method string, params map[string]json.RawMessage) *jsonrpc.Error {
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(params["_meta"], &meta)
	var version string
	_ = json.Unmarshal(meta[jsonrpc.MetaProtocolVersion], &version)
	if v, ok := headerText(h, "MCP-Protocol-Version"); !ok || v != version {
		return jsonrpc.Errorf(codeHeaderMismatch, "MCP-Protocol-Version header %q does not match _meta %q", v, version)
	}
	if m, ok := headerText(h, "Mcp-Method"); !ok || m != method {
		return jsonrpc.Errorf(codeHeaderMismatch, "Mcp-Method header %q does not match method %q", m, method)
	}
	var key string
	switch method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		key = "taskId"
	default:
		return nil
	}
	var want string
	_ = json.Unmarshal(params[key], &want)
	if n, ok := headerText(h, "Mcp-Name"); !ok || n != want {
		return jsonrpc.Errorf(codeHeaderMismatch, "Mcp-Name header %q does not match params.%s %q", n, key, want)
	}
	return nil
}

func (s *server) serveHTTPRequest(d *demux, w http.ResponseWriter, hr *http.Request) {
	if !localHost(hr.Host) {
		writeHTTPError(w, http.StatusForbidden, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "host %q refused", hr.Host))
		return
	}
	if o := hr.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !localHost(u.Host) {
			writeHTTPError(w, http.StatusForbidden, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "origin %q refused", o))
			return
		}
	}
	if hr.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "stateless: POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, 8<<20))
	if err != nil {
		return
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		writeHTTPError(w, http.StatusBadRequest, nil, jsonrpc.Errorf(jsonrpc.CodeParseError, "not a JSON object"))
		return
	}
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	id, isRequest := msg["id"]
	if method == "" || !isRequest {
		s.handleLine(body) // a notification, or a stray response
		w.WriteHeader(http.StatusAccepted)
		return
	}
	params := map[string]json.RawMessage{}
	_ = json.Unmarshal(msg["params"], &params)
	if rerr := checkHeaders(hr.Header, method, params); rerr != nil {
		writeHTTPError(w, http.StatusBadRequest, id, rerr)
		return
	}
	own, ch := d.expect()
	msg["id"] = own
	line, _ := json.Marshal(msg)
	s.handleLine(line)
	var answer []byte
	select {
	case answer = <-ch:
	case <-hr.Context().Done():
		d.forget(own)
		s.handleLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`, own))
		return
	}
	var resp map[string]json.RawMessage
	if json.Unmarshal(answer, &resp) != nil {
		writeHTTPError(w, http.StatusInternalServerError, id, jsonrpc.Errorf(jsonrpc.CodeInternalError, "bad answer"))
		return
	}
	resp["id"] = id
	status := http.StatusOK
	var e struct {
		Code int64 `json:"code"`
	}
	if resp["error"] != nil && json.Unmarshal(resp["error"], &e) == nil &&
		(e.Code == codeHeaderMismatch || e.Code == codeMissingClientCapability) {
		status = http.StatusBadRequest
	}
	out, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
