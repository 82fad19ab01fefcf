package bridge

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// countingConn is a connection that can hold writes (WriteHolder) and
// counts what reaches the peer: each write it passes on is one write(2).
type countingConn struct {
	net.Conn
	mu      sync.Mutex // guards the following
	holding bool
	held    []byte
	writes  []int // the size of each write passed on
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	c.writes = append(c.writes, len(p))
	return c.Conn.Write(p)
}

func (c *countingConn) Hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

func (c *countingConn) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	if len(c.held) == 0 {
		return nil
	}
	c.writes = append(c.writes, len(c.held))
	_, err := c.Conn.Write(c.held)
	c.held = nil
	return err
}

func (c *countingConn) takeWrites() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// countingListener hands out countingConns and keeps the last.
type countingListener struct {
	net.Listener
	mu   sync.Mutex // guards last
	last *countingConn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.mu.Lock()
	l.last = cc
	l.mu.Unlock()
	return cc, nil
}

// A JSON answer larger than net/http's connection buffer leaves in one
// write on a connection that holds writes, as a small one does.
func TestLargeAnswerLeavesInOneWrite(t *testing.T) {
	f := &changingMCPD{fakeMCPD: newFakeMCPD()}
	var tools []string
	for i := range 60 {
		tools = append(tools, fmt.Sprintf(`{"name":"tool%d","description":"%s","inputSchema":{"type":"object"}}`, i, strings.Repeat("d", 100)))
	}
	h := NewHTTPHandler(f, HTTPOptions{MaxBody: 1 << 16, Warnf: t.Logf})
	srv := httptest.NewUnstartedServer(h)
	ln := &countingListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return WithWriteHolder(ctx, c.(*countingConn))
	}
	srv.Start()
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	list := func() string {
		t.Helper()
		status, _, body := post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", "")...)
		if status != 200 {
			t.Fatalf("tools/list: %d %s", status, body)
		}
		return body
	}
	conn := func() *countingConn {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return ln.last
	}

	small := list()
	if w := conn().takeWrites(); len(w) != 1 {
		t.Errorf("a %d-byte answer took writes of %v bytes, want one", len(small), w)
	}
	f.setAlpha("[" + strings.Join(tools, ",") + "]")
	large := list()
	if len(large) < 2*holdAbove {
		t.Fatalf("the large answer has %d bytes", len(large))
	}
	if w := conn().takeWrites(); len(w) != 1 || w[0] < len(large) {
		t.Errorf("a %d-byte answer took writes of %v bytes, want one", len(large), w)
	}
}
