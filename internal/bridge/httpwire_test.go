package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// post sends body with headers (pairs) and returns status, headers and body.
func post(t *testing.T, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	return do(t, http.MethodPost, url, body, append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)...)
}

func do(t *testing.T, method, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func modernHeaders(method, name string) []string {
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return h
}

// errCode is the JSON-RPC error code and id of a JSON body.
func errCode(t *testing.T, body string) (int64, string) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error == nil {
		t.Fatalf("not a JSON-RPC error: %s", body)
	}
	return m.Error.Code, string(m.ID)
}

// A modern call's progress and answer go on its SSE stream with the host's
// id; a call with only an answer is plain JSON.
func TestHTTPModernWire(t *testing.T) {
	_, _, srv := newHTTPTest(t)
	url := srv.URL + "/servers/alpha/mcp"
	status, hdr, body := post(t, url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"tok","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		modernHeaders("tools/call", "progress")...)
	if status != 200 || hdr.Get("Content-Type") != "text/event-stream" || hdr.Get("X-Accel-Buffering") != "no" || hdr.Get(hdrSessionID) != "" {
		t.Fatalf("progress call: %d %v", status, hdr)
	}
	if strings.Count(body, "event: message\ndata: ") != 3 || !strings.Contains(body, `"progressToken":"tok"`) || !strings.Contains(body, `"id":7,"result"`) {
		t.Errorf("progress call stream:\n%s", body)
	}
	status, hdr, body = post(t, url, `{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"a":1},`+modernMeta+`}}`,
		modernHeaders("tools/call", "echo")...)
	if status != 200 || hdr.Get("Content-Type") != "application/json" || !strings.HasPrefix(body, `{"jsonrpc":"2.0","id":"e","result"`) {
		t.Errorf("echo: %d %v %s", status, hdr, body)
	}
}

// Modern header checks and the error → status map.
func TestHTTPModernErrors(t *testing.T) {
	_, _, srv := newHTTPTest(t)
	url := srv.URL + "/servers/beta/mcp"
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"where","arguments":` + args + `,` + modernMeta + `}}`
	}
	// The bridge learns the x-mcp-header of where from a listing.
	if status, _, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", "")...); status != 200 {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	cases := []struct {
		name    string
		body    string
		headers []string
		status  int
		code    int64
	}{
		{"name mismatch", call(`{}`), modernHeaders("tools/call", "other"), 400, codeHeaderMismatch},
		{"name missing", call(`{}`), modernHeaders("tools/call", ""), 400, codeHeaderMismatch},
		{"method missing", call(`{}`), []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Name", "where"}, 400, codeHeaderMismatch},
		{"method case", call(`{}`), modernHeaders("TOOLS/CALL", "where"), 400, codeHeaderMismatch},
		{"version mismatch", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			modernHeaders("server/discover", ""), 400, codeHeaderMismatch},
		{"unsupported version", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			[]string{"MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "server/discover"}, 400, -32022},
		{"no _meta", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, modernHeaders("tools/list", ""), 400, -32602},
		{"removed method", `{"jsonrpc":"2.0","id":3,"method":"ping","params":{` + modernMeta + `}}`, modernHeaders("ping", ""), 404, -32601},
		{"initialize in modern", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{` + modernMeta + `}}`, modernHeaders("initialize", ""), 404, -32601},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"foo/bar","params":{` + modernMeta + `}}`, modernHeaders("foo/bar", ""), 404, -32601},
		{"param missing", call(`{"region":"eu"}`), modernHeaders("tools/call", "where"), 400, codeHeaderMismatch},
		{"param mismatch", call(`{"region":"eu"}`), append(modernHeaders("tools/call", "where"), "Mcp-Param-Region", "us"), 400, codeHeaderMismatch},
		{"param bad base64", call(`{"region":"Hello"}`), append(modernHeaders("tools/call", "where"), "Mcp-Param-Region", "=?base64?SGVsbG8?="), 400, codeHeaderMismatch},
		{"response in modern", `{"jsonrpc":"2.0","id":3,"result":{}}`, modernHeaders("", ""), 400, -32600},
		// A served request's -32602 is its answer, not a malformed request.
		{"bad cursor", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + modernMeta + `,"cursor":"nope"}}`, modernHeaders("tools/list", ""), 200, -32602},
	}
	for _, c := range cases {
		status, _, body := post(t, url, c.body, c.headers...)
		if status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, status, c.status, body)
			continue
		}
		code, id := errCode(t, body)
		if code != c.code || (c.code != -32600 && id != "3") {
			t.Errorf("%s: code %d id %s, want %d id 3: %s", c.name, code, id, c.code, body)
		}
	}
	for _, v := range []string{"eu", "=?base64?ZXU=?="} {
		status, _, body := post(t, url, call(`{"region":"eu"}`), append(modernHeaders("tools/call", "where"), "Mcp-Param-Region", v)...)
		if status != 200 || strings.Contains(body, "error") {
			t.Errorf("matching Mcp-Param-Region %q: %d %s", v, status, body)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if status, hdr, _ := do(t, m, url, ""); status != 405 || hdr.Get("Allow") != "POST" {
			t.Errorf("%s without session: %d Allow %q", m, status, hdr.Get("Allow"))
		}
	}
}

// Bad input: each gets a clear JSON-RPC error and its status.
func TestHTTPBadInput(t *testing.T) {
	_, _, srv := newHTTPTest(t)
	url := srv.URL + "/mcp"
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		headers []string
		status  int
		code    int64
	}{
		{"malformed", "POST", "/mcp", `{"jsonrpc":`, nil, 400, -32700},
		{"too deep", "POST", "/mcp", `{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, nil, 400, -32700},
		{"batch", "POST", "/mcp", `[` + ping + `]`, nil, 400, -32600},
		{"too large", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 1<<16) + `"}}`, nil, 413, -32600},
		{"content type", "POST", "/mcp", ping, []string{"Content-Type", "text/plain"}, 415, -32600},
		{"accept", "POST", "/mcp", ping, []string{"Accept", "text/html"}, 406, -32600},
		{"accept json only", "POST", "/mcp", ping, []string{"Accept", "application/json"}, 406, -32600},
		{"accept stream only", "POST", "/mcp", ping, []string{"Accept", "text/event-stream"}, 406, -32600},
		{"accept q=0", "POST", "/mcp", ping, []string{"Accept", "application/json;q=0, text/event-stream"}, 406, -32600},
		{"method", "PUT", "/mcp", ping, []string{"Content-Type", "application/json"}, 405, -32600},
		{"path", "POST", "/other", ping, nil, 404, -32600},
		{"unknown server", "POST", "/servers/alhpa/mcp", ping, nil, 404, -32600},
		{"no session", "POST", "/mcp", ping, nil, 400, -32600},
		{"unknown session", "POST", "/mcp", ping, []string{hdrSessionID, "NOPE"}, 404, -32600},
		{"legacy version header", "POST", "/mcp", ping, []string{"MCP-Protocol-Version", "1999-01-01"}, 400, -32022},
	}
	for _, c := range cases {
		var status int
		var body string
		if c.method == "POST" {
			status, _, body = post(t, srv.URL+c.path, c.body, c.headers...)
		} else {
			status, _, body = do(t, c.method, srv.URL+c.path, c.body, c.headers...)
		}
		if status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, status, c.status, body)
			continue
		}
		if code, _ := errCode(t, body); code != c.code {
			t.Errorf("%s: code %d, want %d: %s", c.name, code, c.code, body)
		}
		if c.name == "too deep" && !strings.Contains(body, "exceeded max depth") {
			t.Errorf("too deep: %s, want the reason", body)
		}
		if c.name == "malformed" && !strings.Contains(body, "unexpected end of JSON input") {
			t.Errorf("malformed: %s, want the reason", body)
		}
		if c.name == "unknown server" && !strings.Contains(body, `did you mean \"alpha\"`) {
			t.Errorf("unknown server: %s", body)
		}
	}
	for _, accept := range []string{"*/*", "", "application/json;q=0.9, text/event-stream"} {
		status, _, _ := post(t, url, ping, "Accept", accept)
		if status != 400 { // accepted; then refused for want of a session
			t.Errorf("Accept %q: %d", accept, status)
		}
	}
}

// A legacy session: initialize mints an id; requests without it get 400;
// DELETE ends it (404 after); idle sessions expire; a second GET is 409.
func TestHTTPSessionLifecycle(t *testing.T) {
	_, h, srv := newHTTPTest(t)
	url := srv.URL + "/servers/alpha/mcp"
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	start := func() string {
		status, hdr, body := post(t, url, initialize)
		sid := hdr.Get(hdrSessionID)
		if status != 200 || sid == "" || hdr.Get("Content-Type") != "application/json" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
			t.Fatalf("initialize: %d %v %s", status, hdr, body)
		}
		for _, c := range sid {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("session id %q is not visible ASCII", sid)
			}
		}
		return sid
	}
	sid := start()
	if status, _, _ := post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdrSessionID, sid); status != 202 {
		t.Errorf("notifications/initialized: %d", status)
	}
	if status, _, body := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hdrSessionID, sid, "MCP-Protocol-Version", "2025-11-25"); status != 200 || !strings.Contains(body, `"result":{}`) {
		t.Errorf("ping: %d %s", status, body)
	}
	if status, _, body := post(t, url, strings.Replace(initialize, `"id":1`, `"id":9`, 1), hdrSessionID, sid); status != 400 ||
		!strings.Contains(body, `"id":9`) || !strings.Contains(body, "initialized already") {
		t.Errorf("a second initialize in the session: %d %s, want 400 naming it", status, body)
	}

	// One GET stream per session.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set(hdrSessionID, sid)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %v %v", err, resp)
	}
	if status, _, _ := do(t, http.MethodGet, url, "", hdrSessionID, sid, "Accept", "text/event-stream"); status != 409 {
		t.Errorf("second GET: %d, want 409", status)
	}
	cancel()
	resp.Body.Close()

	if status, _, _ := do(t, http.MethodDelete, url, "", hdrSessionID, sid); status != 204 {
		t.Errorf("DELETE: %d", status)
	}
	if status, _, _ := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, hdrSessionID, sid); status != 404 {
		t.Errorf("after DELETE: %d, want 404", status)
	}

	// Expiry: a session unused for the idle time ends (once its GET
	// stream, if any, is closed).
	sid = start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.expire(time.Now().Add(h.idle + time.Second))
		h.mu.Lock()
		_, alive := h.sessions[sid]
		h.mu.Unlock()
		if !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle session did not expire")
		}
		time.Sleep(10 * time.Millisecond) // the first GET's end is counted asynchronously
	}
	if status, _, _ := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, hdrSessionID, sid); status != 404 {
		t.Errorf("after expiry: %d, want 404", status)
	}
}

// Closing a POST mid-call cancels the call upstream, in both eras.
func TestHTTPDisconnectCancels(t *testing.T) {
	f, _, srv := newHTTPTest(t)
	url := srv.URL + "/servers/alpha/mcp"
	_, hdr, _ := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	sid := hdr.Get(hdrSessionID)
	for _, c := range []struct {
		body    string
		headers []string
	}{
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, []string{hdrSessionID, sid}},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{},` + modernMeta + `}}`, modernHeaders("tools/call", "slow")},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i < len(c.headers); i += 2 {
			req.Header.Set(c.headers[i], c.headers[i+1])
		}
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		waitFor(t, f.started, "the slow call to start")
		cancel()
		waitFor(t, done, "the client to give up")
		waitFor(t, f.cancelled, "the slow call's cancellation upstream")
	}
}

// A DELETE of a session with a call in flight answers that call with an
// error: its host is still waiting for it.
func TestHTTPDeleteAnswersCallsInFlight(t *testing.T) {
	f, _, srv := newHTTPTest(t)
	url := srv.URL + "/servers/alpha/mcp"
	_, hdr, _ := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	sid := hdr.Get(hdrSessionID)
	type answer struct {
		status int
		body   string
	}
	got := make(chan answer, 1)
	go func() {
		status, _, body := post(t, url, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, hdrSessionID, sid)
		got <- answer{status, body}
	}()
	waitFor(t, f.started, "the slow call to start")
	if status, _, _ := do(t, http.MethodDelete, url, "", hdrSessionID, sid); status != 204 {
		t.Fatalf("DELETE: %d", status)
	}
	a := <-got
	if a.status != 200 || !strings.Contains(a.body, `"id":5`) || !strings.Contains(a.body, "session ended") {
		t.Errorf("the call in flight at DELETE got %d %q, want an error saying its session ended", a.status, a.body)
	}
	waitFor(t, f.cancelled, "the slow call's cancellation upstream")
}

// A tool's Mcp-Param-* headers are checked even when no host listed the
// tools before the call: the bridge learns them itself.
func TestHTTPModernParamHeaderBeforeAnyList(t *testing.T) {
	_, _, srv := newHTTPTest(t)
	url := srv.URL + "/servers/beta/mcp"
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"where","arguments":{"region":"eu"},` + modernMeta + `}}`
	status, _, resp := post(t, url, body, modernHeaders("tools/call", "where")...)
	if code, _ := errCode(t, resp); status != 400 || code != codeHeaderMismatch {
		t.Fatalf("call without its Mcp-Param-Region header before any list: %d %s, want 400 %d", status, resp, codeHeaderMismatch)
	}
}

// Closing the handler with a modern call in flight cancels the call
// upstream: the call's context is its connection's, and the shared
// bridge's end ends it (endInflight).
func TestHTTPCloseCancelsModernCallsInFlight(t *testing.T) {
	f, h, srv := newHTTPTest(t)
	url := srv.URL + "/servers/alpha/mcp"
	done := make(chan int, 1)
	go func() {
		status, _, _ := post(t, url, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{},`+modernMeta+`}}`,
			modernHeaders("tools/call", "slow")...)
		done <- status
	}()
	waitFor(t, f.started, "the slow call to start")
	closed := make(chan struct{})
	go func() {
		h.Close()
		close(closed)
	}()
	waitFor(t, f.cancelled, "the slow call's cancellation upstream")
	waitFor(t, closed, "Close to return")
	waitFor(t, done, "the host's POST to end")
}
