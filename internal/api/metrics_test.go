package api

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc/codes"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// recordingObserver is a CallObserver that records what it was told.
type recordingObserver struct {
	mu  sync.Mutex
	got []string // "server method"
}

func (r *recordingObserver) ObserveCall(server, method string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d <= 0 {
		r.got = append(r.got, "non-positive duration")
	}
	r.got = append(r.got, server+" "+method)
}

func (r *recordingObserver) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.got)
	slices.Sort(out)
	return out
}

// TestCallObserver checks that every MCP request through the API is timed
// per server and method, an aggregate list once per server, and a request
// for an unknown server not at all.
func TestCallObserver(t *testing.T) {
	b := &fakeBackend{
		call: func(ctx context.Context, server string, req *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
			return &session.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
		},
		list: func(ctx context.Context, server, method string, _ *session.Request, _ supervisor.CallOptions) (json.RawMessage, error) {
			if server == "ghost" {
				return nil, supervisor.ErrUnknownServer
			}
			return json.RawMessage(`[]`), nil
		},
		status: []supervisor.Status{{Name: "a"}, {Name: "b"}},
	}
	rec := &recordingObserver{}
	log := zaptest.NewLogger(t)
	path := filepath.Join(tempdir.Short(t), "s", "mcpd.sock")
	l, err := socket.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	gs := NewGRPCServer(core.New(b, core.Options{Logger: log, Observer: rec}), log)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := mcpdv1.NewMcpdClient(dial(t, path))
	ctx := ctxT(t)

	stream, err := c.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "a", Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(stream); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Server: "b", Uri: "fake://hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx, &mcpdv1.ListToolsRequest{}); err != nil { // every server
		t.Fatal(err)
	}
	_, err = c.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: "ghost"})
	wantCode(t, err, codes.NotFound, "")

	want := []string{"a tools/call", "a tools/list", "b resources/read", "b tools/list"}
	if got := rec.calls(); !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
}
