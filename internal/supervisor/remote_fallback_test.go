package supervisor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// sseServer is the Go SDK's 2024-11-05 HTTP+SSE handler, counting the
// POSTs to the stream's URL itself (those only a Streamable HTTP client
// sends).
type sseServer struct {
	*httptest.Server
	streamPOSTs atomic.Int64
}

func newSSEServer(t *testing.T) *sseServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sse-test", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ss := &sseServer{}
	ss.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Query().Get("sessionid") == "" {
			ss.streamPOSTs.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ss.CloseClientConnections()
		ss.Close()
	})
	return ss
}

// An HTTP+SSE server configured as Streamable HTTP is served over HTTP+SSE;
// the transport is remembered across restarts until the config changes.
func TestRemoteFallbackToSSE(t *testing.T) {
	ss := newSSEServer(t)
	spec := Spec{Name: "r", Remote: &config.Remote{URL: ss.URL + "/sse", Type: config.TypeHTTP}, RequestTimeout: 10 * time.Second}
	opts := fastRestarts()
	opts.Specs = []Spec{spec}
	h := newHarness(t, opts, nil)
	h.mustEcho("r", "one")
	if st := h.status("r"); st.State != StateReady {
		t.Fatalf("status: %+v", st)
	}
	if logs, _ := h.s.Logs("r", 100); !containsLine(logs, "using the 2024-11-05 HTTP+SSE transport") {
		t.Errorf("logs do not say the transport fell back: %v", logs)
	}
	probes := ss.streamPOSTs.Load()
	if probes == 0 {
		t.Fatal("no Streamable HTTP POST was tried first")
	}

	if _, err := h.s.Restart(context.Background(), "r"); err != nil {
		t.Fatalf("restart: %v", err)
	}
	h.mustEcho("r", "two")
	if n := ss.streamPOSTs.Load(); n != probes {
		t.Fatalf("%d Streamable HTTP POSTs after the restart, want none: the transport was not remembered", n-probes)
	}

	// Another config (a header) is another server: Streamable HTTP first.
	changed := spec
	changed.Remote = &config.Remote{URL: spec.Remote.URL, Type: config.TypeHTTP, Headers: map[string]string{"X-Test": "1"}}
	if _, err := h.s.Apply([]Spec{changed}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	waitFor(t, "a call to succeed after the config change", func() bool {
		got, err := h.echo("r", "three")
		return err == nil && got == "three" && ss.streamPOSTs.Load() > probes
	})
}
