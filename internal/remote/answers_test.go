package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// tamperServer is the Go SDK's Streamable HTTP server (legacy sessions)
// behind a handler that may answer a request itself.
type tamperServer struct {
	*httptest.Server
	mcp *mcp.Server
	// answer, if set, may answer a POST in place of the server; body is
	// the request's.
	answer func(w http.ResponseWriter, body string) bool
	// get, if set, may answer a GET in place of the server.
	get func(w http.ResponseWriter) bool
}

func newTamperServer(t *testing.T, jsonResponse bool) *tamperServer {
	t.Helper()
	ts := &tamperServer{mcp: mcp.NewServer(&mcp.Implementation{Name: "tamper", Version: "1"}, nil)}
	mcp.AddTool(ts.mcp, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Ms int `json:"ms"`
	}) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.mcp },
		&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && ts.get != nil && ts.get(w) {
			return
		}
		if r.Method == http.MethodPost && ts.answer != nil {
			b, _ := io.ReadAll(r.Body)
			if ts.answer(w, string(b)) {
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(b)))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		for ss := range ts.mcp.Sessions() {
			_ = ss.Close()
		}
	})
	return ts
}

// A 200 whose body is not the request's response fails that request at
// once, and a response carrying another request's id is not taken as that
// request's answer.
func TestAnswerWithoutTheResponseFailsTheCall(t *testing.T) {
	ts := newTamperServer(t, true)
	var sleepID atomic.Value // the wire id of the sleep call in flight
	sleepID.Store("")
	bodies := map[string]string{
		"empty":        "",
		"not json":     "<html>oops</html>",
		"notification": `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		"other id":     "", // the sleep call's id, filled in when asked
	}
	ts.answer = func(w http.ResponseWriter, body string) bool {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Kind string `json:"kind"`
				} `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(body), &req)
		switch req.Params.Name {
		case "sleep":
			sleepID.Store(string(req.ID))
			return false
		case "bad":
			w.Header().Set("Content-Type", "application/json")
			b := bodies[req.Params.Arguments.Kind]
			if req.Params.Arguments.Kind == "other id" {
				b = `{"jsonrpc":"2.0","id":` + sleepID.Load().(string) + `,"result":{"content":[{"type":"text","text":"forged"}]}}`
			}
			_, _ = io.WriteString(w, b)
			return true
		}
		return false
	}
	c := connect(t, remote.Options{URL: ts.URL}, session.ProtocolLegacy)

	sleepDone := make(chan string, 1)
	go func() {
		resp, err := c.call(t, 30*time.Second, "tools/call", `{"name":"sleep","arguments":{"ms":1500}}`, nil)
		if err != nil {
			sleepDone <- err.Error()
			return
		}
		sleepDone <- string(resp.Result)
	}()
	waitFor(t, "the sleep call to reach the server", func() bool { return sleepID.Load().(string) != "" })

	for _, kind := range []string{"empty", "not json", "notification", "other id"} {
		start := time.Now()
		_, err := c.call(t, 20*time.Second, "tools/call", `{"name":"bad","arguments":{"kind":"`+kind+`"}}`, nil)
		if err == nil || !strings.Contains(err.Error(), "without its response") || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %s, want a prompt error saying the response is missing", kind, err, time.Since(start))
		}
	}
	if got := <-sleepDone; !strings.Contains(got, "slept") {
		t.Errorf("the sleep call got %s, want its own answer", got)
	}
	if st := c.conn.Stats(); st.LinesSkipped < 1 {
		t.Errorf("stats %+v: the forged response was not counted", st)
	}
	c.mustCall(t, "tools/call", `{"name":"sleep","arguments":{"ms":1}}`)
}

// An error without an id in a 200 answers the request it came back on.
func TestAnswerErrorWithoutIDIsTheResponse(t *testing.T) {
	ts := newTamperServer(t, true)
	ts.answer = func(w http.ResponseWriter, body string) bool {
		if !strings.Contains(body, `"name":"bad"`) {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"it broke"}}`)
		return true
	}
	c := connect(t, remote.Options{URL: ts.URL}, session.ProtocolLegacy)
	resp, err := c.call(t, 10*time.Second, "tools/call", `{"name":"bad"}`, nil)
	if err != nil || resp.Error == nil || resp.Error.Message != "it broke" {
		t.Fatalf("= %+v, %v; want the server's error", resp, err)
	}
}

// The GET stream refused for a while (503) is opened again later: the
// session's notifications are not lost for good.
func TestGETStreamOutlastsServerErrors(t *testing.T) {
	ts := newTamperServer(t, false)
	var refusals atomic.Int32
	ts.get = func(w http.ResponseWriter) bool {
		if refusals.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	events := transport.NewRing(100, 1<<16)
	c := connect(t, remote.Options{URL: ts.URL, Events: events}, session.ProtocolLegacy)
	waitFor(t, "the event stream to open", func() bool { return hasEvent(events, "event stream opened") })
	if !hasEvent(events, "503") {
		t.Errorf("no event for the refused GETs: %v", events.Last(100))
	}
	mcp.AddTool(ts.mcp, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	c.waitNote(t, "notifications/tools/list_changed")
}

func hasEvent(r *transport.Ring, s string) bool {
	for _, l := range r.Last(100) {
		if strings.Contains(l.Text, s) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A request written after the session expired was not sent: its error
// says it may be sent again, in the next session.
func TestWriteAfterExpiryIsNotProcessed(t *testing.T) {
	ts := newTamperServer(t, true)
	expired := atomic.Bool{}
	ts.get = func(w http.ResponseWriter) bool {
		expired.Store(true)
		http.Error(w, "session not found", http.StatusNotFound)
		return true
	}
	c := connect(t, remote.Options{URL: ts.URL}, session.ProtocolLegacy)
	select {
	case <-c.conn.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the Conn did not end after the 404")
	}
	if !expired.Load() || !errors.Is(c.conn.ExitError(), remote.ErrSessionExpired) {
		t.Fatalf("ExitError = %v, want the expired session", c.conn.ExitError())
	}
	err := c.conn.WriteMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`))
	if !errors.Is(err, remote.ErrNotProcessed) || !errors.Is(err, remote.ErrClosed) {
		t.Fatalf("WriteMessage after expiry = %v, want ErrClosed and ErrNotProcessed", err)
	}
}
