package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// The Go SDK's streamable client, in both eras, on one server's endpoint
// and on the aggregate: list, call with progress, cancel, read, prompts,
// subscribe and update.
func TestHTTPGoSDKClient(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, ep := range []struct{ path, prefix string }{{"/servers/alpha/mcp", ""}, {"/mcp", "alpha__"}} {
			t.Run(era+ep.path, func(t *testing.T) { testGoSDK(t, era, ep.path, ep.prefix) })
		}
	}
}

func testGoSDK(t *testing.T, era, path, prefix string) {
	f, _, srv := newHTTPTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	progress := make(chan float64, 4)
	updated := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + path, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if cs.ID() == "" && era != "2026-07-28" {
		t.Error("legacy connection got no session id")
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), prefix+"echo") {
		t.Fatalf("tools/list gave %v, want %secho", names, prefix)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "echo", Arguments: map[string]any{"x": 1}})
	if err != nil || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"x":1`) {
		t.Fatalf("echo: %v %+v", err, res)
	}
	params := &mcp.CallToolParams{Name: prefix + "progress", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "done" {
		t.Fatalf("progress call: %v %+v", err, res)
	}
	// The client declares roots, so in the modern era the call is open to
	// a legacy child's requests (mrtr.go): its progress still reaches it.
	for want := 1.0; want <= 2; want++ {
		if got := waitFor(t, progress, "progress"); got != want {
			t.Errorf("progress %v, want %v", got, want)
		}
	}

	// Cancelling the call's context cancels it upstream.
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: prefix + "slow", Arguments: map[string]any{}})
		done <- err
	}()
	waitFor(t, f.started, "the slow call to start")
	ccancel()
	if err := waitFor(t, done, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	waitFor(t, f.cancelled, "the slow call's cancellation upstream")

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "res://alpha/a"})
	if err != nil || read.Contents[0].Text != "A" {
		t.Fatalf("resources/read: %v %+v", err, read)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prefix + "greet"})
	if err != nil || len(prompt.Messages) != 1 {
		t.Fatalf("prompts/get: %v %+v", err, prompt)
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://alpha/a"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	// The update reaches the host once the subscription is in place on
	// the bridge's Subscribe stream: send it until it does.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		f.broadcast(&service.SubscriptionEvent{Kind: service.ResourceUpdated, Server: "alpha", URI: "res://alpha/a"})
		select {
		case uri := <-updated:
			if uri != "res://alpha/a" {
				t.Fatalf("updated %q", uri)
			}
			return
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("no resources/updated reached the client")
		}
	}
}
