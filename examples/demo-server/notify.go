package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file holds what makes the demo server send notifications on demand,
// for trying `mcpdctl watch` and for mcpd-bench's fan-out and recovery
// sections: the resource demo://counter, the tool touch (announces
// notifications/resources/updated) and the tool toggle_tool (adds or
// removes the tool surprise, which makes the SDK announce
// notifications/tools/list_changed).

// counterURI is the resource touch updates by default.
const counterURI = "demo://counter"

// metaSent is the _meta key of a resources/updated notification sent by
// touch: the wall clock (Unix nanoseconds) just before the server wrote it,
// so that a receiver on the same machine can measure the delivery latency.
const metaSent = "mcpd.dev/sentUnixNano"

// metaCount is the _meta key carrying the counter value after the touch.
const metaCount = "mcpd.dev/count"

// surpriseTool is the tool toggle_tool adds and removes.
const surpriseTool = "surprise"

type touchIn struct {
	URI string `json:"uri,omitempty" jsonschema:"the resource whose update to announce (default demo://counter)"`
}

// notifier is the state behind touch and toggle_tool.
type notifier struct {
	s *mcp.Server

	mu       sync.Mutex // guards the fields below
	count    int64
	surprise bool
}

// addNotifyTools registers demo://counter, touch and toggle_tool on s.
func addNotifyTools(s *mcp.Server) {
	n := &notifier{s: s}
	s.AddResource(&mcp.Resource{
		URI:         counterURI,
		Name:        "counter",
		Description: "How many times the touch tool was called; touch announces its update.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		n.mu.Lock()
		c := n.count
		n.mu.Unlock()
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/plain", Text: fmt.Sprint(c)},
		}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name: "touch",
		Description: "Increment demo://counter and send notifications/resources/updated for uri (default demo://counter) " +
			"to the clients subscribed to it; _meta carries mcpd.dev/sentUnixNano (send time) and mcpd.dev/count.",
	}, n.touch)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "toggle_tool",
		Description: "Add the tool surprise, or remove it if present; the server then sends notifications/tools/list_changed.",
	}, n.toggle)
}

func (n *notifier) touch(ctx context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
	uri := in.URI
	if uri == "" {
		uri = counterURI
	}
	n.mu.Lock()
	n.count++
	c := n.count
	n.mu.Unlock()
	err := n.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{
		URI:  uri,
		Meta: mcp.Meta{metaSent: time.Now().UnixNano(), metaCount: c},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("announce update of %q: %w", uri, err)
	}
	return text(fmt.Sprintf("touched %s (count %d)", uri, c)), nil, nil
}

func (n *notifier) toggle(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	n.mu.Lock() // held across the change, so toggles apply in order
	defer n.mu.Unlock()
	n.surprise = !n.surprise
	if !n.surprise {
		n.s.RemoveTools(surpriseTool)
		return text("removed " + surpriseTool), nil, nil
	}
	mcp.AddTool(n.s, &mcp.Tool{Name: surpriseTool, Description: "Added by toggle_tool."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("surprise!"), nil, nil
		})
	return text("added " + surpriseTool), nil, nil
}
