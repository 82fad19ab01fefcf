package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The HTTP client reads an answer in JSON and in SSE (with a notification
// and a comment before the response), and sends the headers and envelope a
// modern Streamable HTTP server checks.
func TestHTTPClientJSONAndSSE(t *testing.T) {
	for _, sse := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			env, err := jsonrpc.DecodeEnvelope(body)
			if err != nil || r.Header.Get("Mcp-Method") != env.Method || r.Header.Get("MCP-Protocol-Version") != jsonrpc.ModernVersion ||
				!strings.Contains(r.Header.Get("Accept"), "text/event-stream") || !strings.Contains(string(env.Params), jsonrpc.MetaClientCapabilities) {
				http.Error(w, fmt.Sprintf("bad request %s %v", body, r.Header), http.StatusBadRequest)
				return
			}
			if env.Method == "tools/call" && r.Header.Get("Mcp-Name") != "echo" {
				http.Error(w, "no Mcp-Name", http.StatusBadRequest)
				return
			}
			result := `{"tools":[]}`
			if env.Method == "tools/call" {
				result = `{"content":[{"type":"text","text":"hello from mcpd-bench"}]}`
			}
			answer := `{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + result + `}`
			if !sse {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, ": ok\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			_, _ = io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
		}))
		c := newHTTPClient(srv.URL, 2)
		ctx := context.Background()
		if err := c.echo(ctx, "s"); err != nil {
			t.Errorf("sse %v: echo: %v", sse, err)
		}
		if n, err := c.listTools(ctx); err != nil || n == 0 {
			t.Errorf("sse %v: list: %d, %v", sse, n, err)
		}
		c.close()
		srv.Close()
	}
}

// The HTTP floor answers a relayed call, the list bytes, and 202 for a
// notification.
func TestHTTPFloorHandler(t *testing.T) {
	srv := httptest.NewServer(floorHandler(nil, json.RawMessage(`{"tools":[{"name":"echo"}]}`)))
	defer srv.Close()
	c := newHTTPClient(srv.URL+"/list", 1)
	defer c.close()
	if n, err := c.listTools(context.Background()); err != nil || n != len(`{"tools":[{"name":"echo"}]}`) {
		t.Fatalf("list: %d, %v", n, err)
	}
	resp, err := http.Post(srv.URL+"/list", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("notification: %s, want 202", resp.Status)
	}
}

// procCPU reads this process's CPU time, which grows as it works.
func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 200_000_000 {
		x ^= i
	}
	after, err := procCPU(os.Getpid())
	if err != nil || after < before {
		t.Fatalf("procCPU: %v then %v, %v (%d)", before, after, err, x)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("procCPU of no process: no error")
	}
}
