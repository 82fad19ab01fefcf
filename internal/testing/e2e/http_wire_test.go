package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// rawPost sends body with headers (pairs; an empty value deletes) and
// returns status, headers and body.
func rawPost(t *testing.T, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return rawDo(t, req, headers...)
}

func rawDo(t *testing.T, req *http.Request, headers ...string) (int, http.Header, string) {
	t.Helper()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
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

// legacySession initializes a 2025-11-25 session at url and returns its id.
func legacySession(t *testing.T, url string) string {
	t.Helper()
	status, hdr, body := rawPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize at %s = %d %q %s", url, status, sid, body)
	}
	if status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid); status != http.StatusAccepted {
		t.Fatalf("initialized = %d %s", status, body)
	}
	return sid
}

// jsonError is the JSON-RPC error code of a plain JSON body.
func jsonError(t *testing.T, body string) int64 {
	t.Helper()
	var m struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error == nil || m.Error.Message == "" {
		t.Fatalf("not a JSON-RPC error with a message: %s", body)
	}
	return m.Error.Code
}

// sseMessages is the data of the message events of an SSE body.
func sseMessages(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// A modern call's progress reaches the host on the call's SSE stream with
// the host's own token and id, from a real modern child.
func TestHTTPModernProgressOnTheWire(t *testing.T) {
	_, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	status, hdr, body := rawPost(t, base+"/servers/g/mcp",
		`{"jsonrpc":"2.0","id":"host-7","method":"tools/call","params":{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"wire-tok",`+modernMeta[len(`"_meta":{`):]+`}}`,
		modernHeaders("tools/call", "progress")...)
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("progress call = %d %v %s", status, hdr, body)
	}
	msgs := sseMessages(body)
	if len(msgs) != 3 || !strings.Contains(msgs[0], `"method":"notifications/progress"`) || !strings.Contains(msgs[0], `"progressToken":"wire-tok"`) ||
		!strings.Contains(msgs[2], `"id":"host-7"`) || !strings.Contains(msgs[2], "done 2") {
		t.Errorf("progress call stream: %q, want two progress notifications with the host's token, then the answer", msgs)
	}
}
