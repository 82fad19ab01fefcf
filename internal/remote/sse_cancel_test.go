package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// heldSSE is an HTTP+SSE (2024-11-05) server that holds the 202 of every
// tools/call POST until the test ends: it has the request while its POST
// is still unanswered, as a server that relays a request before it
// acknowledges it does.
type heldSSE struct {
	srv     *httptest.Server
	events  chan []byte   // messages to send on the event stream
	got     chan string   // "method id" of every message POSTed
	release chan struct{} // closed at the end: held POSTs are answered
}

func newHeldSSE(t *testing.T) *heldSSE {
	h := &heldSSE{events: make(chan []byte, 16), got: make(chan string, 64), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /message\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case m := <-h.events:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		id := m.ID
		if m.Method == "notifications/cancelled" {
			id = m.Params.RequestID
		}
		h.got <- m.Method + " " + string(id)
		switch m.Method {
		case "initialize":
			h.events <- fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"held","version":"1"}}}`, m.ID)
		case "tools/call":
			select {
			case <-h.release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusAccepted)
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(h.release)
		h.srv.Close()
	})
	return h
}

// wait returns the id of the next POSTed message of method.
func (h *heldSSE) wait(t *testing.T, method string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case g := <-h.got:
			if m, id, _ := strings.Cut(g, " "); m == method {
				return id
			}
		case <-deadline:
			t.Fatalf("the server got no %s", method)
		}
	}
}

// A call cancelled after the server received it, while its POST was still
// unanswered, is cancelled at the server too.
func TestSSECancelWhilePostUnanswered(t *testing.T) {
	h := newHeldSSE(t)
	c := connect(t, remote.Options{URL: h.srv.URL + "/sse", Type: remote.TypeSSE}, session.ProtocolLegacy)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.sess.Call(ctx, &session.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"slow"}`)})
		done <- err
	}()
	id := h.wait(t, "tools/call")
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled call succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
	if got := h.wait(t, "notifications/cancelled"); got != id {
		t.Fatalf("notifications/cancelled for %s, want %s", got, id)
	}
}
