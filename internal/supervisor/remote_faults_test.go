package supervisor

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// watchedURI is the resource subServer's clients may subscribe to.
const watchedURI = "test://watched"

// subServer is the Go SDK's Streamable HTTP server with an echo tool, a
// "slow" tool that runs until its request is cancelled, a subscribable
// resource, and a switch that cuts the next tools/call's SSE response
// after its first event.
type subServer struct {
	*httptest.Server
	srv        *mcp.Server
	cutNext    atomic.Bool
	subscribed atomic.Int32 // resources/subscribe calls for watchedURI
	slowEnded  chan struct{}
}

func newSubServer(t *testing.T, stateless bool) *subServer {
	t.Helper()
	s := &subServer{slowEnded: make(chan struct{}, 8)}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "remote-sub", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI == watchedURI {
				s.subscribed.Add(1)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		s.slowEnded <- struct{}{}
		return nil, nil, ctx.Err()
	})
	s.srv.AddResource(&mcp.Resource{URI: watchedURI, Name: "watched"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: watchedURI, Text: "v"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: true})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && s.cutNext.Load() {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && s.cutNext.CompareAndSwap(true, false) {
				cutStream(w)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
		for ss := range s.srv.Sessions() {
			_ = ss.Close()
		}
	})
	return s
}

// cutStream starts an SSE response, sends one progress event without an
// id (nothing to resume from) and drops the connection.
func cutStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// A response stream cut before its response ends the call at once with an
// error saying so, and the server serves again (a new connection).
func TestRemoteStreamCutMidResponse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
	}{{"legacy", false}, {"modern", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSubServer(t, tc.stateless)
			opts := fastRestarts()
			opts.Specs = []Spec{remoteSpec("r", s.URL)}
			h := newHarness(t, opts, nil)
			h.mustEcho("r", "one")
			s.cutNext.Store(true)
			start := time.Now()
			_, err := h.echo("r", "two")
			if err == nil || !strings.Contains(err.Error(), "ended before the response") || time.Since(start) > 5*time.Second {
				t.Fatalf("call whose stream was cut: %v after %s", err, time.Since(start))
			}
			waitFor(t, "a call to succeed after the cut", func() bool {
				got, err := h.echo("r", "three")
				return err == nil && got == "three"
			})
		})
	}
}

// A server slower than the request timeout: the call ends with a timeout
// error near its deadline, the server sees the cancellation, and the next
// call is served.
func TestRemoteSlowServerPastDeadline(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
	}{{"legacy", false}, {"modern", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSubServer(t, tc.stateless)
			opts := fastRestarts()
			spec := remoteSpec("r", s.URL)
			spec.RequestTimeout = 500 * time.Millisecond
			opts.Specs = []Spec{spec}
			h := newHarness(t, opts, nil)
			h.mustEcho("r", "one")
			start := time.Now()
			_, err := h.s.Call(context.Background(), "r", toolCall("slow", map[string]any{}), CallOptions{})
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "timed out") || took > 5*time.Second {
				t.Fatalf("slow call: %v after %s", err, took)
			}
			select {
			case <-s.slowEnded:
			case <-time.After(30 * time.Second):
				t.Fatal("the server never saw the slow call cancelled")
			}
			h.mustEcho("r", "two")
			if st := h.status("r"); st.State != StateReady {
				t.Errorf("state after a timed-out call: %+v", st)
			}
		})
	}
}

// A resource subscription comes back after the connection to the server is
// lost: the new connection subscribes again, and an update after it
// reaches the app.
func TestRemoteSubscriptionAfterReconnect(t *testing.T) {
	s := newSubServer(t, false)
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("r", s.URL)}
	h := newHarness(t, opts, nil)
	h.mustEcho("r", "one")
	stream := h.subscribe("app", subscriptions.Watch{Servers: []string{"r"}, URIs: []string{watchedURI}})
	waitFor(t, "resources/subscribe", func() bool { return s.subscribed.Load() == 1 })
	updated := func(ev *subscriptions.Event) bool {
		return ev.Kind == subscriptions.KindResourceUpdated && ev.URI == watchedURI
	}
	notify := func() {
		_ = s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: watchedURI})
	}
	waitFor(t, "the first update", func() bool { notify(); return tookEvent(stream, updated) })

	s.cutNext.Store(true) // the connection is lost
	if _, err := h.echo("r", "two"); err == nil {
		t.Fatal("call on a cut stream succeeded")
	}
	waitFor(t, "resources/subscribe again on the new connection", func() bool { return s.subscribed.Load() >= 2 })
	waitFor(t, "an update after the reconnect", func() bool { notify(); return tookEvent(stream, updated) })
}
