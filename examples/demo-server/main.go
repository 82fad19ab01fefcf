// Command demo-server is a small MCP server on stdio, built with the official
// Go SDK, for trying mcpd out and for its integration tests. It speaks both
// protocol eras: the legacy initialize handshake (2025-11-25 and earlier) and
// the modern per-request envelope with server/discover (2026-07-28).
//
// It offers the tools echo, add, slow_count (with progress notifications and
// cancellation), time, touch (announces notifications/resources/updated for
// demo://counter) and toggle_tool (adds or removes the tool surprise, so the
// tool list changes); the resources demo://readme and demo://counter
// (subscribable) and the template demo://echo/{text}; and the prompt review. Diagnostics go to stderr, never
// to stdout, which carries only the protocol.
//
// Usage:
//
//	demo-server [--name NAME]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/pollio"
	"github.com/mcpd-dev/mcpd/internal/version"
)

const readme = `This is mcpd's demo MCP server.

Tools: echo (returns its message), add (a+b), slow_count (counts to n with
progress notifications, delay_ms between steps; stops when cancelled), time,
touch (increments demo://counter and announces its update to subscribers) and
toggle_tool (adds or removes the tool surprise: the tool list changes).
Resources: demo://readme (this text), demo://counter (subscribable) and
demo://echo/{text}.
Prompts: review (argument: code).
`

// Limits keep a careless call from occupying the server for hours.
const (
	maxCount = 10000
	maxDelay = 60 * time.Second
)

func main() {
	name := flag.String("name", "demo-server", "server name reported in serverInfo")
	flag.Parse()
	log.SetPrefix(*name + ": ")
	log.SetFlags(0)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *name); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, name string) error {
	server := newServer(name)
	log.Printf("serving on stdio (pid %d)", os.Getpid())
	// Frames up to mcpd's own line limit (32 MiB), not the SDK's 16 MiB, so
	// that an echo can carry the largest result mcpd passes. Stdin is read
	// through Go's poller: a blocking read of it can stall the whole server
	// for a minute at a GC (internal/pollio).
	err := server.Run(ctx, &mcp.IOTransport{Reader: pollio.Stdin(), Writer: pollio.Stdout(), MaxLineLength: 32 << 20})
	// The MCP stdio shutdown: "the client SHOULD initiate shutdown by first
	// closing the input stream to the child process (the server)". EOF on
	// stdin, or a signal, is therefore a normal end.
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) {
		log.Print("stdin closed, exiting")
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to return"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum" jsonschema:"a + b"`
}

type slowCountIn struct {
	N       int `json:"n" jsonschema:"count from 1 to n (at most 10000)"`
	DelayMs int `json:"delay_ms,omitempty" jsonschema:"milliseconds to wait between steps (default 100, at most 60000)"`
}

type timeIn struct {
	Zone string `json:"zone,omitempty" jsonschema:"IANA time zone such as Europe/Paris (default: local)"`
}

// newServer is the demo server named name: its tools (notify.go adds
// touch and toggle_tool), resources, resource template and prompt.
func newServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: version.Version}, &mcp.ServerOptions{
		Instructions: "A demo server for mcpd: echo, add, slow_count, time, touch, toggle_tool; demo://readme, demo://counter; prompt review.",
		// Handlers make the server advertise resources.subscribe; the SDK
		// keeps the subscriptions (notify.go: touch).
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	addNotifyTools(s)
	for _, add := range []func(*mcp.Server){
		tool(&mcp.Tool{Name: "echo", Description: "Return the message unchanged."}, echoTool),
		tool(&mcp.Tool{Name: "add", Description: "Add two numbers."}, addTool),
		tool(&mcp.Tool{
			Name:        "slow_count",
			Description: "Count from 1 to n, waiting delay_ms between steps, reporting progress when the request has a progress token. Stops when cancelled.",
		}, slowCount),
		tool(&mcp.Tool{Name: "time", Description: "Return the current time (RFC 3339)."}, timeTool),
	} {
		add(s)
	}
	addResources(s)
	addReviewPrompt(s)
	return s
}

// tool is the registration of tool t with handler h.
func tool[In, Out any](t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) func(*mcp.Server) {
	return func(s *mcp.Server) { mcp.AddTool(s, t, h) }
}

// echoTool returns the message unchanged.
func echoTool(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Message), nil, nil
}

// addTool adds two numbers.
func addTool(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
	// A nil result lets the SDK fill content and structuredContent
	// from the output value.
	return nil, addOut{Sum: in.A + in.B}, nil
}

// timeTool returns the current time, in the zone asked for if any.
func timeTool(_ context.Context, _ *mcp.CallToolRequest, in timeIn) (*mcp.CallToolResult, any, error) {
	now := time.Now()
	if in.Zone != "" {
		loc, err := time.LoadLocation(in.Zone)
		if err != nil {
			return errorResult(fmt.Sprintf("unknown time zone %q", in.Zone)), nil, nil
		}
		now = now.In(loc)
	}
	return text(now.Format(time.RFC3339Nano)), nil, nil
}

// addResources adds demo://readme and the template demo://echo/{text}.
func addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{
		URI:         "demo://readme",
		Name:        "readme",
		Description: "What this server offers.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/plain", Text: readme},
		}}, nil
	})

	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "demo://echo/{text}",
		Name:        "echo",
		Description: "A resource whose content is the last path segment of its URI.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		raw, ok := strings.CutPrefix(req.Params.URI, "demo://echo/")
		if !ok || raw == "" {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		t, err := url.PathUnescape(raw)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/plain", Text: t},
		}}, nil
	})
}

// addReviewPrompt adds the prompt review {code, focus}.
func addReviewPrompt(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{
		Name:        "review",
		Description: "Ask for a code review.",
		Arguments: []*mcp.PromptArgument{
			{Name: "code", Description: "the code to review", Required: true},
			{Name: "focus", Description: "what to pay attention to (optional)"},
		},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		code := req.Params.Arguments["code"]
		ask := "Please review this code"
		if f := req.Params.Arguments["focus"]; f != "" {
			ask += ", paying attention to " + f
		}
		return &mcp.GetPromptResult{
			Description: "Code review request",
			Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: ask + ":\n\n" + code}},
			},
		}, nil
	})
}

// slowCount counts to n. The MCP progress rule: "The receiver MAY then send
// progress notifications containing the original token", and progress "MUST
// increase with each notification".
func slowCount(ctx context.Context, req *mcp.CallToolRequest, in slowCountIn) (*mcp.CallToolResult, any, error) {
	if in.N < 0 || in.N > maxCount {
		return errorResult(fmt.Sprintf("n must be between 0 and %d", maxCount)), nil, nil
	}
	delay := 100 * time.Millisecond
	if in.DelayMs != 0 {
		delay = time.Duration(in.DelayMs) * time.Millisecond
	}
	if delay < 0 || delay > maxDelay {
		return errorResult(fmt.Sprintf("delay_ms must be between 0 and %d", maxDelay.Milliseconds())), nil, nil
	}
	token := req.Params.GetProgressToken()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i := 1; i <= in.N; i++ {
		if i > 1 {
			timer.Reset(delay)
			select {
			case <-timer.C:
			case <-ctx.Done():
				// "Receivers of cancellation notifications SHOULD: stop
				// processing the cancelled request". (The SDK still writes a
				// response, an isError result; a client drops it as late.)
				log.Printf("slow_count cancelled at %d of %d", i-1, in.N)
				return nil, nil, ctx.Err()
			}
		}
		if token != nil {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(i),
				Total:         float64(in.N),
				Message:       fmt.Sprintf("counted %d of %d", i, in.N),
			})
			if err != nil && ctx.Err() == nil {
				log.Printf("progress notification: %v", err)
			}
		}
	}
	return text(fmt.Sprintf("counted to %d", in.N)), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func errorResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
