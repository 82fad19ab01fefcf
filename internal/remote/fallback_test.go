package remote_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
)

// An HTTP+SSE server configured as Streamable HTTP is reached over
// HTTP+SSE at the same URL, whichever era is probed first.
func TestFallbackToSSEServerEverything(t *testing.T) {
	_, base := upstream.Everything(t, "sse")
	for _, proto := range []string{session.ProtocolAuto, session.ProtocolLegacy} {
		t.Run(proto, func(t *testing.T) {
			c := connect(t, remote.Options{URL: base + "/sse", Type: remote.TypeHTTP}, proto)
			if got := c.conn.Transport(); got != remote.TypeSSE {
				t.Fatalf("Transport() = %q, want %q", got, remote.TypeSSE)
			}
			everythingExercise(t, c)
		})
	}
}

// A Streamable HTTP server stays on Streamable HTTP.
func TestFallbackNotForStreamableHTTP(t *testing.T) {
	_, base := upstream.Everything(t, "streamableHttp")
	c := connect(t, remote.Options{URL: base + "/mcp"}, session.ProtocolAuto)
	if got := c.conn.Transport(); got != remote.TypeHTTP {
		t.Fatalf("Transport() = %q, want %q", got, remote.TypeHTTP)
	}
}

// fallbackProbe answers POSTs per its handler and counts the GETs.
type fallbackProbe struct {
	gets atomic.Int32
	post func(w http.ResponseWriter, body string)
}

func (p *fallbackProbe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		p.gets.Add(1)
		http.Error(w, "no stream here", http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	p.post(w, string(b))
}

// A server/discover answered with a JSON-RPC error rules the fallback out:
// the 404 of initialize is the answer, and no GET is sent.
func TestFallbackNotAfterAnsweredDiscover(t *testing.T) {
	p := &fallbackProbe{post: func(w http.ResponseWriter, body string) {
		if strings.Contains(body, `"server/discover"`) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no such method"}}`)
			return
		}
		http.NotFound(w, nil)
	}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	_, err := tryConnect(t, remote.Options{URL: srv.URL}, session.ProtocolAuto)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("handshake: %v, want the 404 of initialize", err)
	}
	if n := p.gets.Load(); n != 0 {
		t.Fatalf("%d GETs, want none", n)
	}
}

// When the GET fails too, initialize fails naming both answers, and the
// GET was tried once.
func TestFallbackFailsToo(t *testing.T) {
	p := &fallbackProbe{post: func(w http.ResponseWriter, body string) {
		http.Error(w, "nothing", http.StatusNotFound)
	}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	_, err := tryConnect(t, remote.Options{URL: srv.URL}, session.ProtocolAuto)
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "HTTP+SSE") || !strings.Contains(err.Error(), "405") {
		t.Fatalf("handshake: %v, want both the POST's 404 and the GET's 405", err)
	}
	if n := p.gets.Load(); n != 1 {
		t.Fatalf("%d GETs, want 1", n)
	}
}
