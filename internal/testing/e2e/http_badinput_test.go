package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Bad input on the real binary gets a clear JSON-RPC error with the right
// HTTP status, and loses nothing: the session it came on still serves.
func TestHTTPBadInput(t *testing.T) {
	_, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	url := base + "/servers/g/mcp"
	sid := legacySession(t, url)
	const maxBody = 32 << 20 // bridge.DefaultMaxLine
	for _, c := range []struct {
		name    string
		body    string
		headers []string
		status  int
		code    int64
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":2,"method":"tools/list"`, nil, 400, -32700},
		{"not an object", `"tools/list"`, nil, 400, -32600},
		{"no jsonrpc member", `{"id":2,"method":"tools/list"}`, nil, 400, -32600},
		{"batch", `[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`, nil, 400, -32600},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, nil, 400, -32600},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, nil, 400, -32600},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, nil, 400, -32600},
		{"empty method", `{"jsonrpc":"2.0","id":2,"method":""}`, nil, 400, -32600},
		{"method and result", `{"jsonrpc":"2.0","id":2,"method":"ping","result":{}}`, nil, 400, -32600},
		{"wrong content type", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{"Content-Type", "text/plain"}, 415, -32600},
		{"not acceptable", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{"Accept", "text/html"}, 406, -32600},
		{"unknown session", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{"Mcp-Session-Id", "NO-SUCH-SESSION"}, 404, -32600},
		{"unsupported version header", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{"MCP-Protocol-Version", "1999-01-01"}, 400, -32022},
	} {
		t.Run(c.name, func(t *testing.T) {
			headers := append([]string{"Mcp-Session-Id", sid}, c.headers...)
			status, hdr, body := rawPost(t, url, c.body, headers...)
			if status != c.status || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d %q %s, want %d with a JSON-RPC error", status, hdr.Get("Content-Type"), body, c.status)
			}
			if got := jsonError(t, body); got != c.code {
				t.Errorf("code %d (%s), want %d", got, body, c.code)
			}
		})
	}
	t.Run("oversize body", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", maxBody) + `"}}}`
		status, _, body := rawPost(t, url, big, "Mcp-Session-Id", sid)
		if status != http.StatusRequestEntityTooLarge || jsonError(t, body) != -32600 {
			t.Errorf("oversize body = %d %s, want 413", status, body)
		}
		// Without a Content-Length the limit holds while reading.
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, url, io.MultiReader(strings.NewReader(big)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		status, _, body = rawDo(t, req, "Mcp-Session-Id", sid)
		if status != http.StatusRequestEntityTooLarge || jsonError(t, body) != -32600 {
			t.Errorf("oversize chunked body = %d %s, want 413", status, body)
		}
	})
	t.Run("session of another endpoint", func(t *testing.T) {
		status, _, body := rawPost(t, base+"/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "Mcp-Session-Id", sid)
		if status != http.StatusNotFound || jsonError(t, body) != -32600 || !strings.Contains(body, `"id":3`) {
			t.Errorf("a session of /servers/g/mcp at /mcp = %d %s, want 404 with the request's id", status, body)
		}
	})
	t.Run("initialize without a protocol version", func(t *testing.T) {
		status, hdr, body := rawPost(t, url, `{"jsonrpc":"2.0","id":5,"method":"initialize"}`)
		if jsonError(t, body) != -32602 || hdr.Get("Mcp-Session-Id") != "" {
			t.Errorf("= %d %v %s, want -32602 and no session", status, hdr, body)
		}
	})
	t.Run("legacy notification without a session", func(t *testing.T) {
		status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if status != http.StatusBadRequest || jsonError(t, body) != -32600 {
			t.Errorf("= %d %s, want 400", status, body)
		}
	})
	t.Run("unknown session names the request", func(t *testing.T) {
		status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, "Mcp-Session-Id", "NOPE")
		if status != http.StatusNotFound || !strings.Contains(body, `"id":4`) {
			t.Errorf("= %d %s, want 404 with id 4", status, body)
		}
	})
	t.Run("unknown server", func(t *testing.T) {
		status, _, body := rawPost(t, base+"/servers/h/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if status != http.StatusNotFound || jsonError(t, body) != -32600 || !strings.Contains(body, `\"h\"`) {
			t.Errorf("unknown server = %d %s, want 404 naming it", status, body)
		}
	})
	t.Run("unknown path and method", func(t *testing.T) {
		if status, _, body := rawPost(t, base+"/nope", `{}`); status != http.StatusNotFound {
			t.Errorf("POST /nope = %d %s, want 404", status, body)
		}
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPut, url, strings.NewReader(`{}`))
		if status, hdr, body := rawDo(t, req); status != http.StatusMethodNotAllowed || hdr.Get("Allow") == "" {
			t.Errorf("PUT = %d %v %s, want 405 with Allow", status, hdr, body)
		}
	})
	// Nothing was lost: the session still answers.
	status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"still here"}}}`, "Mcp-Session-Id", sid)
	if status != http.StatusOK || !strings.Contains(body, "still here") {
		t.Errorf("echo after the bad input = %d %s", status, body)
	}
}

// A host that goes away in the middle of a call, legacy session or modern
// request: the child sees notifications/cancelled, and another host's call
// in flight at the time, and its session, carry on.
func TestHTTPHostDisconnectMidCall(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	url := base + "/servers/g/mcp"
	other := legacySession(t, url)
	otherDone := make(chan string, 1)
	go func() {
		_, _, body := rawPostNoT(url, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000}}}`, "Mcp-Session-Id", other)
		otherDone <- body
	}()
	logsContain(t, c, "g", "sleep started 3000")

	for _, h := range []struct {
		name, body string
		headers    []string
		ms         int
	}{
		{"legacy", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600555}}}`, nil, 600555},
		{"modern", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600666},` + modernMeta + `}}`, modernHeaders("tools/call", "sleep"), 600666},
	} {
		headers := h.headers
		if h.name == "legacy" {
			headers = []string{"Mcp-Session-Id", legacySession(t, url)}
		}
		ctx, cancel := context.WithCancel(ctxT(t))
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(h.body))
			_, err := doNoT(req, headers...)
			done <- err
		}()
		logsContain(t, c, "g", "sleep started "+itoa(h.ms))
		cancel() // the host closes its connection
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("%s host's request ended with %v, want its own cancellation", h.name, err)
		}
		logsContain(t, c, "g", "sleep cancelled "+itoa(h.ms))
	}
	if body := <-otherDone; !strings.Contains(body, "slept 3000") {
		t.Errorf("the other host's call = %s, want its answer", body)
	}
	if status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":6,"method":"ping"}`, "Mcp-Session-Id", other); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("the other host's ping = %d %s", status, body)
	}
}

// rawPostNoT is rawPost for a goroutine other than the test's.
func rawPostNoT(url, body string, headers ...string) (int, http.Header, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err.Error()
	}
	resp, err := doNoT(req, headers...)
	if err != nil {
		return 0, nil, err.Error()
	}
	return resp.StatusCode, resp.Header, resp.body
}

type rawResponse struct {
	*http.Response
	body string
}

// doNoT sends req with the MCP content headers and headers, and reads the
// whole response.
func doNoT(req *http.Request, headers ...string) (*rawResponse, error) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	return &rawResponse{resp, b.String()}, nil
}
