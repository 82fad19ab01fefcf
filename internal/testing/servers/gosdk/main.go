// Command gosdk is a stdio MCP server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp). It is a test peer for mcpd:
// one process serves both protocol eras (modern per-request _meta and legacy
// initialize), and it writes one "recv <method>" line to stderr for every
// request or notification it reads, so tests can assert what the child saw.
//
// Tools: echo {message}, progress {steps}, sleep {ms}, add_tool {name},
// touch {uri}, askname, count, big {bytes}. Resources test://a and
// test://b. Prompt greet {name}.
//
// With -http ADDR it serves Streamable HTTP at http://ADDR/mcp instead
// (the SDK's handler; -stateless for the stateless modern mode, -json for
// JSON answers), prints "listening http://HOST:PORT/mcp" on stdout, and
// exits when its stdin closes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/pollio"
)

// ServerName is the serverInfo name the tests expect.
const ServerName = "mcpd-test-gosdk"

func main() {
	httpAddr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	stateless := flag.Bool("stateless", false, "with -http: the stateless (modern) handler")
	jsonResp := flag.Bool("json", false, "with -http: answer requests with JSON instead of SSE")
	flag.Parse()
	if *httpAddr != "" {
		if err := serveHTTP(*httpAddr, &mcp.StreamableHTTPOptions{Stateless: *stateless, JSONResponse: *jsonResp,
			// "Closing the SSE response stream MUST be treated by the server as
			// cancellation of that request" (2026-07-28).
			PropagateRequestCancellation: true}); err != nil {
			fmt.Fprintf(os.Stderr, "gosdk: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "gosdk: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	srv := newServer()
	// Stdin through Go's poller: a blocking read of it can stall the
	// server for a minute at a GC (internal/pollio).
	t := &recvLogTransport{inner: &mcp.IOTransport{Reader: pollio.Stdin(), Writer: pollio.Stdout()}, w: os.Stderr}
	err := srv.Run(ctx, t)
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
		return nil
	}
	return err
}

// serveHTTP serves one server over Streamable HTTP until stdin closes.
func serveHTTP(addr string, opts *mcp.StreamableHTTPOptions) error {
	srv := newServer()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logf(os.Stderr, "recv %s %s", r.Method, r.Header.Get("Mcp-Method"))
		h.ServeHTTP(w, r)
	}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening http://%s/mcp\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stderrMu serialises writes to stderr so lines never interleave.
var stderrMu sync.Mutex

func logf(w io.Writer, format string, args ...any) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	fmt.Fprintf(w, format+"\n", args...)
}

// recvLogTransport wraps a transport so that every request and notification
// read from the peer is logged as "recv <method>" before the SDK sees it.
type recvLogTransport struct {
	inner mcp.Transport
	w     io.Writer
}

func (t *recvLogTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recvLogConn{Connection: c, w: t.w}, nil
}

type recvLogConn struct {
	mcp.Connection
	w io.Writer
}

func (c *recvLogConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		logf(c.w, "recv %s", m.Method)
	case *jsonrpc.Response:
		logf(c.w, "recv response")
	}
	return msg, nil
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

type progressIn struct {
	Steps int `json:"steps" jsonschema:"how many progress notifications to send"`
}

type sleepIn struct {
	MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
}

type addToolIn struct {
	Name string `json:"name,omitempty" jsonschema:"name of the tool to add (default: added)"`
}

type touchIn struct {
	URI string `json:"uri" jsonschema:"the resource whose update to announce"`
}

type emptyIn struct{}

type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to answer with"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// newServer is the test server: its tools, resources and prompt, with
// tools/list requests counted for the count tool.
func newServer() *mcp.Server {
	var listCount atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: "0.0.1"}, &mcp.ServerOptions{
		Instructions: "mcpd test server (go-sdk)",
		// A SubscribeHandler makes the server advertise resources.subscribe.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				listCount.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	for _, add := range []func(*mcp.Server){
		tool("echo", "echo the message back", echoTool),
		tool("progress", "send steps progress notifications, then answer", progressTool),
		tool("sleep", "sleep ms milliseconds; honours cancellation; logs \"sleep started <ms>\" and \"sleep cancelled <ms>\" to stderr", sleepTool),
		tool("add_tool", "add a tool at runtime (announces tools/list_changed)", addToolTool(srv)),
		tool("touch", "announce notifications/resources/updated for uri", touchTool(srv)),
		tool("askname", "ask the user's name by form elicitation, then greet", askNameTool),
		tool("big", "answer with a text of the given number of bytes", bigTool),
		tool("count", "how many tools/list requests this process has served", countTool(&listCount)),
	} {
		add(srv)
	}
	addResources(srv)
	addGreetPrompt(srv)
	return srv
}

// tool is the registration of a tool named name with handler h.
func tool[In any](name, description string, h mcp.ToolHandlerFor[In, any]) func(*mcp.Server) {
	return func(srv *mcp.Server) { mcp.AddTool(srv, &mcp.Tool{Name: name, Description: description}, h) }
}

// echoTool answers with the message.
func echoTool(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Message), nil, nil
}

// progressTool sends a progress notification per step (given a progress
// token), then answers.
func progressTool(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
	tok := req.Params.GetProgressToken()
	if tok != nil {
		for i := 1; i <= in.Steps; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: tok,
				Progress:      float64(i),
				Total:         float64(in.Steps),
				Message:       fmt.Sprintf("step %d", i),
			}); err != nil {
				return nil, nil, fmt.Errorf("notify progress: %w", err)
			}
		}
	}
	return text(fmt.Sprintf("done %d", in.Steps)), nil, nil
}

// sleepTool sleeps in.MS milliseconds unless cancelled, logging both.
func sleepTool(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
	logf(os.Stderr, "sleep started %d", in.MS)
	timer := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return text(fmt.Sprintf("slept %d", in.MS)), nil, nil
	case <-ctx.Done():
		logf(os.Stderr, "sleep cancelled %d", in.MS)
		return nil, nil, ctx.Err()
	}
}

// addToolTool adds a tool to srv (named "added" by default) answering
// with its name.
func addToolTool(srv *mcp.Server) mcp.ToolHandlerFor[addToolIn, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in addToolIn) (*mcp.CallToolResult, any, error) {
		name := in.Name
		if name == "" {
			name = "added"
		}
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "added at runtime"},
			func(context.Context, *mcp.CallToolRequest, emptyIn) (*mcp.CallToolResult, any, error) {
				return text(name), nil, nil
			})
		return text("added " + name), nil, nil
	}
}

// touchTool announces an update of in.URI from srv.
func touchTool(srv *mcp.Server) mcp.ToolHandlerFor[touchIn, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
		if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
			return nil, nil, fmt.Errorf("resource updated %q: %w", in.URI, err)
		}
		return text("touched " + in.URI), nil, nil
	}
}

// askNameTool uses multi round-trip requests (spec 2026-07-28, "Multi
// round-trip requests"): "the server returns an InputRequiredResult ...
// the client retries with inputResponses". For a legacy client the SDK
// turns the same answer into a real elicitation/create request.
func askNameTool(ctx context.Context, req *mcp.CallToolRequest, in emptyIn) (*mcp.CallToolResult, any, error) {
	if resp, ok := req.Params.InputResponses["who"]; ok {
		if er, ok := resp.(*mcp.ElicitResult); ok && er.Action == "accept" {
			if name, ok := er.Content["name"].(string); ok {
				return text("hello " + name), nil, nil
			}
		}
		return text("hello stranger"), nil, nil
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{
			Mode:    "form",
			Message: "Your name?",
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}},
				"required":   []string{"name"},
			},
		}},
		RequestState: "askname-1",
	}, nil, nil
}

// bigTool answers with in.Bytes bytes of text.
func bigTool(ctx context.Context, req *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
	return text(strings.Repeat("x", in.Bytes)), nil, nil
}

// countTool answers with how many tools/list requests listCount counted.
func countTool(listCount *atomic.Int64) mcp.ToolHandlerFor[emptyIn, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in emptyIn) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprint(listCount.Load())), nil, nil
	}
}

// addResources adds the text resources test://a and test://b.
func addResources(srv *mcp.Server) {
	for _, r := range []struct{ uri, body string }{{"test://a", "hello a"}, {"test://b", "hello b"}} {
		body := r.body
		srv.AddResource(&mcp.Resource{URI: r.uri, Name: r.uri[len("test://"):], MIMEType: "text/plain"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
					{URI: req.Params.URI, MIMEType: "text/plain", Text: body},
				}}, nil
			})
	}
}

// addGreetPrompt adds the prompt greet {name}.
func addGreetPrompt(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "greet someone",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Required: true}},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{
			Description: "greeting",
			Messages: []*mcp.PromptMessage{{
				Role:    "user",
				Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"},
			}},
		}, nil
	})
}
