package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
)

// outageServer is a Go SDK server with an echo tool on a fixed loopback
// port that can be killed (listener closed, every connection dropped)
// and started again on the same port, as a fresh process would be: its
// sessions are gone.
type outageServer struct {
	t    *testing.T
	addr string
	sse  bool

	mu  sync.Mutex // guards following
	srv *http.Server
	mcp *mcp.Server
	wg  sync.WaitGroup // Serve of each run
}

func newOutageServer(t *testing.T, sse bool) *outageServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &outageServer{t: t, addr: ln.Addr().String(), sse: sse}
	o.serve(ln)
	t.Cleanup(func() {
		o.kill()
		o.wg.Wait()
	})
	return o
}

// url is the server's MCP endpoint.
func (o *outageServer) url() string {
	if o.sse {
		return "http://" + o.addr + "/sse"
	}
	return "http://" + o.addr + "/mcp"
}

func (o *outageServer) serve(ln net.Listener) {
	s := mcp.NewServer(&mcp.Implementation{Name: "outage", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	get := func(*http.Request) *mcp.Server { return s }
	var h http.Handler = mcp.NewStreamableHTTPHandler(get, nil)
	if o.sse {
		h = mcp.NewSSEHandler(get, nil)
	}
	srv := &http.Server{Handler: h}
	o.mu.Lock()
	o.srv, o.mcp = srv, s
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// kill closes the listener and drops every connection (idempotent).
func (o *outageServer) kill() {
	o.mu.Lock()
	srv, s := o.srv, o.mcp
	o.srv, o.mcp = nil, nil
	o.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	for ss := range s.Sessions() {
		_ = ss.Close()
	}
}

// restart serves again on the same port.
func (o *outageServer) restart() {
	o.t.Helper()
	var ln net.Listener
	waitFor(o.t, "the port to be free again", func() bool {
		var err error
		ln, err = net.Listen("tcp", o.addr)
		return err == nil
	})
	o.serve(ln)
}

// watchStates records whether the server was ever seen in state bad,
// until the test ends.
func watchStates(t *testing.T, h *harness, name string, bad State) *atomic.Bool {
	seen := new(atomic.Bool)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if st, err := h.s.ServerStatus(name); err == nil && st.State == bad {
				seen.Store(true)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return seen
}

// A remote server killed and started again on the same port five times
// within a minute is used by the first call after each return, and is
// never held down as a crash loop: its outages are the network's, not
// crashes. While it is down, calls and status name the cause.
func TestRemoteServerRestartedOnSamePort(t *testing.T) {
	for _, tc := range []struct {
		name string
		sse  bool
	}{{"streamable", false}, {"sse", true}} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutageServer(t, tc.sse)
			typ := config.TypeHTTP
			if tc.sse {
				typ = config.TypeSSE
			}
			opts := Options{HandshakeTimeout: 10 * time.Second} // the default crash-loop bound: 5 in 1m
			opts.Specs = []Spec{{Name: "r", Remote: &config.Remote{URL: o.url(), Type: typ}, RequestTimeout: 10 * time.Second}}
			h := newHarness(t, opts, nil)
			h.mustEcho("r", "first")
			survivesRestarts(t, h, o.kill, func(i int) {
				time.Sleep(time.Duration(300+100*i) * time.Millisecond) // the outage
				o.restart()
			})
		})
	}
}

// The same with server-everything in its streamableHttp mode, killed
// (SIGKILL) and started again on its port.
func TestRemoteEverythingRestartedOnSamePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := upstream.EverythingOnPort(t, "streamableHttp", port)
	opts := Options{HandshakeTimeout: 10 * time.Second}
	opts.Specs = []Spec{{Name: "r", Remote: &config.Remote{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Type: config.TypeHTTP},
		RequestTimeout: 10 * time.Second}}
	h := newHarness(t, opts, nil)
	if _, err := h.echo("r", "first"); err != nil {
		t.Fatal(err)
	}
	survivesRestarts(t, h, func() { p.Kill() }, func(int) { p = upstream.EverythingOnPort(t, "streamableHttp", port) })
}

// survivesRestarts kills the server behind "r" and starts it again
// (restart also waits out the outage), five times: while it is down,
// status and calls name the refused connection; after each return the
// next call succeeds; the server is never seen in crashloop.
func survivesRestarts(t *testing.T, h *harness, kill func(), restart func(i int)) {
	t.Helper()
	crashloop := watchStates(t, h, "r", StateCrashLoop)
	for i := range 5 {
		kill()
		// (A call made at once may meet the dropped connection.)
		waitFor(t, "status to name the cause", func() bool {
			st := h.status("r")
			return st.State == StateBackoff && strings.Contains(st.LastError, "connection refused") && st.NextRestartIn > 0
		})
		downCallNamesCause(t, h)
		restart(i)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := h.s.Call(ctx, "r", toolCall("echo", map[string]any{"message": "back"}), CallOptions{})
		cancel()
		if err != nil {
			t.Fatalf("return %d: call after %s: %v", i+1, time.Since(start), err)
		}
	}
	if crashloop.Load() || h.count("r", EventCrashLoop) > 0 {
		t.Errorf("state read crashloop; events %v", h.kinds("r"))
	}
}

// downCallNamesCause makes a call while the server is down: it fails
// soon as unavailable, naming the refused connection.
func downCallNamesCause(t *testing.T, h *harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := h.s.Call(ctx, "r", toolCall("echo", map[string]any{"message": "down"}), CallOptions{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("call while down: %v, want unavailable naming the refused connection", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("call while down took %s", took)
	}
}

// A remote server that cannot be reached fails each call at once with
// the cause (in the error's chain too) and when mcpd tries next, however
// many calls are made; it is never held down as a crash loop, and each
// call tries it again.
func TestRemoteUnreachableIsNotACrashLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	opts := fastRestarts()
	opts.CrashLoopMax, opts.CrashLoopWindow = 3, time.Minute
	opts.Specs = []Spec{remoteSpec("down", refused)}
	h := newHarness(t, opts, nil)
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := h.s.Call(ctx, "down", toolCall("echo", map[string]any{"message": "x"}), CallOptions{})
		cancel()
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("call %d: %v, want unavailable with the refused connection in its chain", i, err)
		}
		if msg := err.Error(); !strings.Contains(msg, `server "down" is unreachable`) || !strings.Contains(msg, "connection refused") ||
			!strings.Contains(msg, "next call") || strings.Contains(msg, "crash-looping") {
			t.Fatalf("call %d: %q, want the cause and when mcpd tries next", i, msg)
		}
	}
	if st := h.status("down"); st.State == StateCrashLoop || !strings.Contains(st.LastError, "connection refused") {
		t.Errorf("status: %s %q", st.State, st.LastError)
	}
	if n := h.count("down", EventCrashLoop); n > 0 {
		t.Errorf("%d crashloop events", n)
	}
}

// A server that accepts the connection and answers every request with
// HTTP 500 is broken, not unreachable: it is still held down by the
// crash-loop bound, saying why.
func TestRemoteServerAnswering500IsBounded(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() { _ = srv.Close(); wg.Wait() })
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("broken", "http://"+ln.Addr().String())}
	h := newHarness(t, opts, nil)
	var last error
	waitFor(t, "the server to be held down", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, last = h.s.Call(ctx, "broken", toolCall("echo", map[string]any{"message": "x"}), CallOptions{})
		st := h.status("broken").State
		return st == StateCrashLoop || st == StateFailed
	})
	st := h.status("broken")
	if !strings.Contains(st.LastError, "500") && !strings.Contains(last.Error(), "500") {
		t.Errorf("held down (%s): status %q, call %v; want the HTTP 500 as the reason", st.State, st.LastError, last)
	}
}
