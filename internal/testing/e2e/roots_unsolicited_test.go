package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A legacy child that asks roots/list on its own (here during its
// handshake, before any call can have reached it) while a modern host's
// call waits for that child to start: the request belongs to no call, so
// mcpd answers it from the roots it knows (the config's here: the host
// names no root) and the host's call is not parked with input_required
// for it; the call gets its own result and its progress.
func TestUnsolicitedRootsListParksNoHostCall(t *testing.T) {
	skipShort(t)
	srv := fakeServer("legacy,rootsatinit")
	srv["roots"] = []string{"/srv/work"}
	d := startBridgeDaemon(t, map[string]map[string]any{"f": srv})

	var progress atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "modern-host", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	client.AddRoots(&mcp.Root{URI: "file:///host/root", Name: "root"})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := bridgeCommand(d, "f")
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	// The bridge's listing started f; after a crash the next call waits
	// for f to start again, and f's roots/list comes meanwhile.
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}) // "exited during tools/call"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"count": 2},
		Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := toolText(t, res); got != "done" {
		t.Errorf("progress result = %q, want done", got)
	}
	// The client runs its notification handlers beside the call's
	// result: wait for the second, bounded.
	for deadline := time.Now().Add(5 * time.Second); progress.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := progress.Load(); n != 2 {
		t.Errorf("progress notifications = %d, want 2 (none dropped)", n)
	}
	if got := callText(t, cs, "initroots", nil); got != `{"roots":[{"uri":"file:///srv/work","name":"work"}]}` {
		t.Errorf("the child's own roots/list got %s, want the configured roots", got)
	}
}
