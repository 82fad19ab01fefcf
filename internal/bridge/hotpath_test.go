package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// hotBackend is memBackend with the answers of the benchmark's demo
// server: an echo result, and a tools list of a realistic size.
type hotBackend struct {
	memBackend
	items json.RawMessage // the same bytes every time, as mcpd's cache gives them
}

func newHotBackend() *hotBackend {
	var items []string
	for i := range 8 {
		items = append(items, fmt.Sprintf(`{"name":"tool%d","description":"Tool number %d does what its name says, <quickly> & well.",`+
			`"inputSchema":{"type":"object","properties":{"message":{"type":"string","description":"what to send"}},"required":["message"]}}`, i, i))
	}
	return &hotBackend{items: json.RawMessage("[" + strings.Join(items, ",") + "]")}
}

func (h *hotBackend) List(_ context.Context, _, method string, _ service.Options) ([]service.ServerList, error) {
	if method != "tools/list" {
		return nil, nil
	}
	return []service.ServerList{{Server: "s", Items: h.items, Cache: service.Hit}}, nil
}

func (h *hotBackend) Send(context.Context, service.Request, func(service.Event)) (*service.Response, error) {
	return &service.Response{Server: "s",
		Result: json.RawMessage(`{"content":[{"type":"text","text":"Echo: hello from mcpd-bench"}],"resultType":"complete"}`)}, nil
}

// hotHost drives a bridge on be over pipes, one request at a time.
type hotHost struct {
	w    io.WriteCloser
	r    *bufio.Reader
	wg   sync.WaitGroup
	errc error
}

func startHotHost(tb testing.TB, be Backend) *hotHost {
	in, hostW := io.Pipe()
	hostR, out := io.Pipe()
	h := &hotHost{w: hostW, r: bufio.NewReader(hostR)}
	h.wg.Go(func() {
		h.errc = ServeStdio(context.Background(), be, Options{
			Names: []string{"s"}, MaxLine: 1 << 20,
			Warnf:       func(string, ...any) {},
			RPCError:    func(_ context.Context, err error, _ string) error { return err },
			CallOptions: func() service.Options { return service.Options{} },
		}, in, out)
		out.Close()
	})
	tb.Cleanup(func() {
		hostW.Close()
		_, _ = io.Copy(io.Discard, h.r)
		h.wg.Wait()
		if h.errc != nil {
			tb.Error(h.errc)
		}
	})
	return h
}

// roundTrip sends line and returns the answer's line.
func (h *hotHost) roundTrip(tb testing.TB, line string) []byte {
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		tb.Fatal(err)
	}
	got, err := h.r.ReadSlice('\n')
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// benchMeta is the envelope the benchmark's session client sends.
const benchMeta = `"_meta":{"` + jsonrpc.MetaClientCapabilities + `":{},"` + jsonrpc.MetaClientInfo +
	`":{"name":"mcpd","version":"dev"},"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `"}`

// benchBridge measures one request kind through the bridge's own code
// (no gRPC): dispatch, parsing, forwarding, encoding the answer.
func benchBridge(b *testing.B, line, want string) {
	h := startHotHost(b, newHotBackend())
	if got := h.roundTrip(b, line); !strings.Contains(string(got), want) {
		b.Fatalf("answer %s lacks %s", got, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.roundTrip(b, line)
	}
}

func BenchmarkBridgeToolsCall(b *testing.B) {
	benchBridge(b, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`+benchMeta+`,"name":"echo","arguments":{"message":"hello from mcpd-bench"}}}`,
		"Echo: hello")
}

func BenchmarkBridgeToolsListCached(b *testing.B) {
	benchBridge(b, `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{`+benchMeta+`}}`, `"tool7"`)
}

func BenchmarkBridgeToolsCallLegacy(b *testing.B) {
	benchBridge(b, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello from mcpd-bench"}}}`,
		"Echo: hello")
}

// benchHandler measures one modern request kind through the HTTP
// handler's own code, without net/http's server: the envelope, the shared
// bridge, the request's stream and the answer's encoding.
func benchHandler(b *testing.B, method, name, params, want string) {
	h := NewHTTPHandler(newHotBackend(), HTTPOptions{MaxBody: 1 << 20, Warnf: b.Logf})
	b.Cleanup(h.Close)
	body := `{"jsonrpc":"2.0","id":8,"method":"` + method + `","params":{` + benchMeta + params + `}}`
	do := func() string {
		r := httptest.NewRequest(http.MethodPost, "/servers/s/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", jsonrpc.ModernVersion)
		r.Header.Set("Mcp-Method", method)
		if name != "" {
			r.Header.Set("Mcp-Name", name)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Body.String()
	}
	if got := do(); !strings.Contains(got, want) {
		b.Fatalf("answer %s lacks %s", got, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		do()
	}
}

func BenchmarkHTTPHandlerToolsListCached(b *testing.B) {
	benchHandler(b, "tools/list", "", "", `"tool7"`)
}

func BenchmarkHTTPHandlerToolsCall(b *testing.B) {
	benchHandler(b, "tools/call", "echo", `,"name":"echo","arguments":{"message":"hello from mcpd-bench"}`, "Echo: hello")
}
