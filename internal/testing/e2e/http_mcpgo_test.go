//lint:file-ignore SA1019 legacy mcp-go clients (the standalone GET stream, resources/subscribe) are exercised on purpose

package e2e

import (
	"context"
	"testing"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// mcp-go's streamable HTTP client in both eras on a modern child's own
// endpoint: lists, call, read, prompt, progress, resource updates (legacy:
// resources/subscribe and the GET stream; modern: subscriptions/listen) and
// cancel reaching the child.
func TestHTTPMcpGoClient(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	for i, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			var opts []transport.StreamableHTTPCOption
			if era == "2025-11-25" {
				// The GET stream carries a legacy session's resource
				// updates (mcp-go stays on the handshake when it listens).
				opts = append(opts, transport.WithContinuousListening())
			}
			tr, err := transport.NewStreamableHTTP(base+"/servers/g/mcp", opts...)
			if err != nil {
				t.Fatal(err)
			}
			cl := mcpgoclient.NewClient(tr, mcpgoclient.WithProtocolVersion(era))
			defer cl.Close()
			progress, updates := recordMcpGoNotifications(cl)
			if err := cl.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Initialize(ctxT(t), mcpgo.InitializeRequest{}); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if got := cl.ProtocolVersion(); got != era {
				t.Fatalf("negotiated %q, want %s", got, era)
			}
			call := func(ctx context.Context, name string, args map[string]any, meta *mcpgo.Meta) (string, error) {
				res, err := cl.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args, Meta: meta}})
				if err != nil {
					return "", err
				}
				var s string
				for _, ct := range res.Content {
					if tc, ok := ct.(mcpgo.TextContent); ok {
						s += tc.Text
					}
				}
				return s, nil
			}
			tools, err := cl.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
			if err != nil || len(tools.Tools) < 5 {
				t.Fatalf("tools = %+v, %v", tools, err)
			}
			if prompts, err := cl.ListPrompts(ctxT(t), mcpgo.ListPromptsRequest{}); err != nil || len(prompts.Prompts) == 0 {
				t.Errorf("prompts = %+v, %v", prompts, err)
			}
			if res, err := cl.ListResources(ctxT(t), mcpgo.ListResourcesRequest{}); err != nil || len(res.Resources) < 2 {
				t.Errorf("resources = %+v, %v", res, err)
			}
			if got, err := call(ctxT(t), "echo", map[string]any{"message": "hi mcp-go"}, nil); got != "hi mcp-go" {
				t.Errorf("echo = %q, %v", got, err)
			}
			rr, err := cl.ReadResource(ctxT(t), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "test://a"}})
			if err != nil || len(rr.Contents) == 0 || rr.Contents[0].(mcpgo.TextResourceContents).Text != "hello a" {
				t.Errorf("read = %+v, %v", rr, err)
			}
			pr, err := cl.GetPrompt(ctxT(t), mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}}})
			if err != nil || len(pr.Messages) == 0 || pr.Messages[0].Content.(mcpgo.TextContent).Text != "Hello, Ada!" {
				t.Errorf("prompt = %+v, %v", pr, err)
			}
			if got, err := call(ctxT(t), "progress", map[string]any{"steps": 3}, &mcpgo.Meta{ProgressToken: "mcpgo-token"}); got != "done 3" {
				t.Fatalf("progress = %q, %v", got, err)
			}
			poll(t, "3 progress notifications", func() (bool, error) { return progress.Load() >= 3, nil })

			if era == "2026-07-28" {
				stop, err := cl.ListenAsync(ctxT(t), mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{"test://a"}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
			} else if err := cl.Subscribe(ctxT(t), mcpgo.SubscribeRequest{Params: mcpgo.SubscribeParams{URI: "test://a"}}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			touchUntilUpdated(t, func() { call(ctxT(t), "touch", map[string]any{"uri": "test://a"}, nil) }, updates, "test://a")

			ms := 600700 + i
			ctx, cancel := context.WithCancel(ctxT(t))
			done := make(chan error, 1)
			go func() {
				_, err := call(ctx, "sleep", map[string]any{"ms": ms}, nil)
				done <- err
			}()
			logsContain(t, c, "g", "sleep started "+itoa(ms))
			cancel()
			if err := <-done; err == nil {
				t.Error("cancelled call succeeded")
			}
			logsContain(t, c, "g", "sleep cancelled "+itoa(ms))
		})
	}
}
