// Command mcpgo is a stdio MCP server built with github.com/mark3labs/mcp-go.
// It is a test peer for mcpd: one process serves both protocol eras, and it
// writes one "recv <method>" line to stderr for every request or
// notification it reads from stdin, so tests can assert what the child saw.
//
// Tools: echo {message}, progress {steps}, sleep {ms}. Resource test://a.
// Prompt greet {name}.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpd-dev/mcpd/internal/pollio"
)

// ServerName is the serverInfo name the tests expect.
const ServerName = "mcpd-test-mcpgo"

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "mcpgo: %v\n", err)
		os.Exit(1)
	}
}

// stderrMu serialises writes to stderr so lines never interleave.
var stderrMu sync.Mutex

func logf(format string, args ...any) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func run(ctx context.Context) error {
	out := &stdoutWatcher{w: os.Stdout, written: make(map[string]chan struct{})}
	srv := newServer(out)
	stdio := server.NewStdioServer(srv)
	stdio.SetErrorLogger(log.New(os.Stderr, "mcpgo: ", 0))
	server.WithWorkerPoolSize(16)(stdio)

	// Every line read from stdin is logged, then handed to the SDK through
	// a pipe, so the log shows exactly what the child received.
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pw.CloseWithError(tee(pollio.Stdin(), pw)) // pollio: no 60 s stall at a GC
	}()
	err := stdio.Listen(ctx, pr, out)
	// Listen returns once the pipe reports EOF, that is after tee ended.
	pr.Close()
	wg.Wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// tee copies r to w line by line, logging "recv <method>" for each JSON-RPC
// request or notification. It returns nil at EOF.
func tee(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var env struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(line, &env) == nil {
				if env.Method != "" {
					logf("recv %s", env.Method)
				} else {
					logf("recv response")
				}
			}
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stdoutWatcher passes the SDK's stdout writes through (each is one whole
// line) and records which progress notifications have been written.
//
// mcp-go queues notifications on a channel that another goroutine drains,
// so without waiting a tool's response can overtake its own progress
// notifications on stdout. The spec says progress notifications are only
// for active requests, so the progress tool waits for its last
// notification to be written before it answers.
type stdoutWatcher struct {
	w io.Writer

	mu      sync.Mutex               // guards written
	written map[string]chan struct{} // progress key -> closed once written
}

func progressKey(token any, progress int) string { return fmt.Sprintf("%v/%d", token, progress) }

func (o *stdoutWatcher) chanLocked(key string) chan struct{} {
	c, ok := o.written[key]
	if !ok {
		c = make(chan struct{})
		o.written[key] = c
	}
	return c
}

// wait returns a channel closed once the progress notification for key was written.
func (o *stdoutWatcher) wait(key string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.chanLocked(key)
}

// forget drops the bookkeeping for key.
func (o *stdoutWatcher) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.written, key)
}

func (o *stdoutWatcher) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		return n, err
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			ProgressToken any     `json:"progressToken"`
			Progress      float64 `json:"progress"`
		} `json:"params"`
	}
	if json.Unmarshal(p, &msg) == nil && msg.Method == "notifications/progress" {
		o.mu.Lock()
		c := o.chanLocked(progressKey(msg.Params.ProgressToken, int(msg.Params.Progress)))
		select {
		case <-c:
		default:
			close(c)
		}
		o.mu.Unlock()
	}
	return n, nil
}

// newServer is the test server: its tools, resource and prompt; out is
// where the progress tool waits for its notifications to be written.
func newServer(out *stdoutWatcher) *server.MCPServer {
	srv := server.NewMCPServer(ServerName, "0.0.1",
		server.WithInstructions("mcpd test server (mcp-go)"),
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
	)
	for _, t := range []server.ServerTool{
		{Tool: mcp.NewTool("echo",
			mcp.WithDescription("echo the message back"),
			mcp.WithString("message", mcp.Required()),
		), Handler: echoTool},
		{Tool: mcp.NewTool("progress",
			mcp.WithDescription("send steps progress notifications, then answer"),
			mcp.WithNumber("steps", mcp.Required()),
		), Handler: progressTool(srv, out)},
		{Tool: mcp.NewTool("sleep",
			mcp.WithDescription("sleep ms milliseconds; honours cancellation; logs \"sleep started <ms>\" and \"sleep cancelled <ms>\" to stderr"),
			mcp.WithNumber("ms", mcp.Required()),
		), Handler: sleepTool},
	} {
		srv.AddTool(t.Tool, t.Handler)
	}

	srv.AddResource(mcp.NewResource("test://a", "a", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI: req.Params.URI, MIMEType: "text/plain", Text: "hello a",
			}}, nil
		})

	srv.AddPrompt(mcp.NewPrompt("greet",
		mcp.WithPromptDescription("greet someone"),
		mcp.WithArgument("name", mcp.RequiredArgument()),
	), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello, "+req.Params.Arguments["name"]+"!")),
		}), nil
	})
	return srv
}

// echoTool answers with the message.
func echoTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(req.GetString("message", "")), nil
}

// progressTool sends srv's progress notifications, one per step (given a
// progress token), and answers once out has seen the last one written.
func progressTool(srv *server.MCPServer, out *stdoutWatcher) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		steps := req.GetInt("steps", 0)
		var tok mcp.ProgressToken
		if req.Params.Meta != nil {
			tok = req.Params.Meta.ProgressToken
		}
		if tok != nil {
			for i := 1; i <= steps; i++ {
				if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": tok,
					"progress":      i,
					"total":         steps,
					"message":       fmt.Sprintf("step %d", i),
				}); err != nil {
					return nil, fmt.Errorf("notify progress: %w", err)
				}
			}
			if steps > 0 {
				key := progressKey(tok, steps)
				defer out.forget(key)
				select {
				case <-out.wait(key):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		return mcp.NewToolResultText(fmt.Sprintf("done %d", steps)), nil
	}
}

// sleepTool sleeps ms milliseconds unless cancelled, logging both.
func sleepTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ms := req.GetInt("ms", 0)
	logf("sleep started %d", ms)
	timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return mcp.NewToolResultText(fmt.Sprintf("slept %d", ms)), nil
	case <-ctx.Done():
		logf("sleep cancelled %d", ms)
		return nil, ctx.Err()
	}
}
