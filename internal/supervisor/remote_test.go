package supervisor

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// Faults of faultServer.
const (
	faultNone = iota
	fault500
	fault404 // once, for a request carrying a session id
	fault401 // the token is refused
)

// faultServer is the Go SDK's Streamable HTTP handler behind a switch that
// injects faults.
type faultServer struct {
	*httptest.Server
	fault atomic.Int32
	hits  atomic.Int64
	slows atomic.Int32 // how many times the slow tool ran
}

func newFaultServer(t *testing.T, stateless bool) *faultServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote-test", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	fs := &faultServer{}
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		fs.slows.Add(1)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: true})
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.hits.Add(1)
		switch fs.fault.Load() {
		case fault500:
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		case fault401:
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "token refused", http.StatusUnauthorized)
			return
		case fault404:
			if r.Header.Get("Mcp-Session-Id") != "" && fs.fault.CompareAndSwap(fault404, faultNone) {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		fs.Close()
		// Sessions mcpd abandoned (the expired one) end with the server.
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return fs
}

func remoteSpec(name, url string) Spec {
	return Spec{Name: name, Remote: &config.Remote{URL: url + "/mcp", Type: config.TypeHTTP}, RequestTimeout: 10 * time.Second}
}

func fastRestarts() Options {
	return Options{BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, HandshakeTimeout: 10 * time.Second}
}

func TestRemoteServerServesAndRecovers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
		era       string
	}{{"legacy", false, "legacy"}, {"modern", true, "modern"}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFaultServer(t, tc.stateless)
			opts := fastRestarts()
			opts.Specs = []Spec{remoteSpec("r", fs.URL)}
			h := newHarness(t, opts, nil)
			h.mustEcho("r", "one")
			st := h.status("r")
			if st.State != StateReady || string(st.Era) != tc.era || st.Pid != 0 || st.URL != fs.URL+"/mcp" {
				t.Fatalf("status: %+v", st)
			}
			// A 500 ends the call with a clear error, and the server comes back.
			fs.fault.Store(fault500)
			start := time.Now()
			_, err := h.echo("r", "two")
			if err == nil || !strings.Contains(err.Error(), "500") || time.Since(start) > 5*time.Second {
				t.Fatalf("echo during a 500: %v after %s", err, time.Since(start))
			}
			fs.fault.Store(faultNone)
			waitFor(t, "a call to succeed after the 500", func() bool {
				got, err := h.echo("r", "three")
				return err == nil && got == "three"
			})
			if logs, _ := h.s.Logs("r", 100); !containsLine(logs, "500") {
				t.Errorf("logs have no transport event for the 500: %v", logs)
			}
		})
	}
}

func containsLine(lines []transport.Line, s string) bool {
	for _, l := range lines {
		if strings.Contains(l.Text, s) {
			return true
		}
	}
	return false
}

func TestRemoteSessionExpiryIsTransparent(t *testing.T) {
	fs := newFaultServer(t, false)
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("r", fs.URL)}
	h := newHarness(t, opts, nil)
	h.mustEcho("r", "one")
	fs.fault.Store(fault404)
	h.mustEcho("r", "two") // met the 404, sent again in a new session
	if fs.fault.Load() != faultNone {
		t.Fatal("the 404 was not served")
	}
	h.waitState("r", StateReady)
}

// A call in flight when the session expires may have been processed: it
// gets its answer or fails, and is not sent again; the call that met the
// 404 is.
func TestRemoteSessionExpiryDoesNotRepeatCallsInFlight(t *testing.T) {
	fs := newFaultServer(t, false)
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("r", fs.URL)}
	h := newHarness(t, opts, nil)
	h.mustEcho("r", "one")
	slow := make(chan error, 1)
	go func() {
		_, err := h.s.Call(context.Background(), "r", toolCall("slow", nil), CallOptions{})
		slow <- err
	}()
	waitFor(t, "the slow call to start", func() bool { return fs.slows.Load() == 1 })
	fs.fault.Store(fault404)
	h.mustEcho("r", "two")
	err := <-slow
	// Its answer, if the server sends it within the grace; else the
	// expired session as its error.
	if err != nil && err.Error() != `server "r": tools/call failed: connection lost: session expired (HTTP 404 Not Found)` {
		t.Errorf("the call in flight = %v, want its answer or the expired session as its error", err)
	}
	time.Sleep(1500 * time.Millisecond) // a call sent again would have started by now
	if n := fs.slows.Load(); n != 1 {
		t.Errorf("the slow tool ran %d times, want once", n)
	}
}

func TestRemoteConnectionRefusedAndTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("down", refused), remoteSpec("tls", tlsSrv.URL)}
	h := newHarness(t, opts, nil)
	for name, want := range map[string]string{"down": "connection refused", "tls": "TLS"} {
		// Generous: on a loaded machine the first attempts take a while.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := h.s.Call(ctx, name, toolCall("echo", map[string]any{"message": "x"}), CallOptions{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, want)
		}
	}
}

// loginAuthorizer says a login is required.
type loginAuthorizer struct{}

func (loginAuthorizer) Token(context.Context) (string, error) {
	return "", remote.ErrLoginRequired
}
func (loginAuthorizer) OnUnauthorized(context.Context, *http.Response) error {
	return remote.ErrLoginRequired
}

func TestRemoteLoginRequired(t *testing.T) {
	fs := newFaultServer(t, true)
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("r", fs.URL)}
	opts.NewAuthorizer = func(string, *config.Remote) remote.Authorizer { return loginAuthorizer{} }
	h := newHarness(t, opts, nil)
	_, err := h.echo("r", "x")
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "mcpdctl login r") {
		t.Fatalf("call: %v", err)
	}
	h.waitState("r", StateLoginRequired)
	if fs.hits.Load() != 0 {
		t.Errorf("%d requests reached the server without a token", fs.hits.Load())
	}
}

// tokenAuthorizer has a token; a 401 for it means a login is required.
type tokenAuthorizer struct{}

func (tokenAuthorizer) Token(context.Context) (string, error) { return "token", nil }
func (tokenAuthorizer) OnUnauthorized(context.Context, *http.Response) error {
	return remote.ErrLoginRequired
}

// A token refused during a session fails the call in flight as a login
// required, as the calls after it, not as a lost connection.
func TestRemoteLoginRequiredMidSession(t *testing.T) {
	fs := newFaultServer(t, false)
	opts := fastRestarts()
	opts.Specs = []Spec{remoteSpec("r", fs.URL)}
	opts.NewAuthorizer = func(string, *config.Remote) remote.Authorizer { return tokenAuthorizer{} }
	h := newHarness(t, opts, nil)
	h.mustEcho("r", "one")
	fs.fault.Store(fault401)
	for _, which := range []string{"in flight", "after"} {
		_, err := h.echo("r", "two")
		if want := `server "r" requires login; run: mcpdctl login r`; !errors.Is(err, ErrLoginRequired) || err.Error() != want {
			t.Errorf("call %s the refusal: %v, want %q", which, err, want)
		}
	}
	h.waitState("r", StateLoginRequired)
}
