package httpface

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
)

// testHost is a plain HTTP client playing an MCP host of the 2025-11-25
// era, on connections of its own.
type testHost struct {
	t    *testing.T
	url  string
	name string
	c    *http.Client
	sid  string
}

func newTestHost(t *testing.T, url, name string) *testHost {
	h := &testHost{t: t, url: url, name: name, c: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(h.exit)
	return h
}

// post sends one JSON-RPC message and reads the whole answer.
func (h *testHost) post(body string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.sid != "" {
		req.Header.Set("Mcp-Session-Id", h.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := h.c.Do(req)
	if err != nil {
		h.t.Fatalf("%s: POST: %v", h.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.sid = sid
	}
	return resp.StatusCode, string(b)
}

// initialize starts the host's session, and lists its tools: the call
// that names its app in status.
func (h *testHost) initialize() {
	h.t.Helper()
	code, body := h.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + h.name + `","version":"1"}}}`)
	if code != 200 || h.sid == "" {
		h.t.Fatalf("%s: initialize: %d %s", h.name, code, body)
	}
	if code, body := h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != 202 {
		h.t.Fatalf("%s: initialized: %d %s", h.name, code, body)
	}
	if code, body := h.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != 200 {
		h.t.Fatalf("%s: tools/list: %d %s", h.name, code, body)
	}
}

// openGET opens the session's GET stream, and returns once it is open; the
// returned func closes it.
func (h *testHost) openGET() func() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", h.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := h.c.Do(req)
	if err != nil || resp.StatusCode != 200 {
		cancel()
		h.t.Fatalf("%s: GET: %v %v", h.name, err, resp)
	}
	return func() {
		cancel()
		_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
		resp.Body.Close()
	}
}

// exit drops the host's connections, as a host process that exits does,
// without DELETE.
func (h *testHost) exit() { h.c.CloseIdleConnections() }

// listed reports which of names status lists as an app, and which of the
// subscription ids subs it lists.
func listed(t *testing.T, srv *core.Service, names []string, subs ...uint64) (apps, open map[string]bool) {
	t.Helper()
	_, all := srv.Status()
	apps, open = map[string]bool{}, map[string]bool{}
	for _, a := range all {
		apps[a.Name] = slices.Contains(names, a.Name)
	}
	for _, id := range subscriptionIDs(t, srv) {
		if slices.Contains(subs, id) {
			open[fmt.Sprint(id)] = true
		}
	}
	return apps, open
}

// newSubscription is the id of the one subscription status lists that is
// not among old, once there is one.
func newSubscription(t *testing.T, srv *core.Service, old ...uint64) uint64 {
	t.Helper()
	var id uint64
	waitFor(t, "a new subscription", func() bool {
		for _, sub := range subscriptionIDs(t, srv) {
			if !slices.Contains(old, sub) {
				id = sub
				return true
			}
		}
		return false
	})
	return id
}

// A session whose host stopped sending, with no GET stream open (closed,
// or never opened), ends with its subscriptions within the idle bound;
// one with its GET stream open stays.
func TestHTTPSessionOfGoneHostEnds(t *testing.T) {
	srv, be := newDaemon(t)
	const idle = time.Second
	h := bridge.NewHTTPHandler(be, bridge.HTTPOptions{SessionIdle: idle, Warnf: t.Logf})
	ln, err := Listen(must(ParseAddr("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	f := Serve(ln, h, Options{Logger: zaptest.NewLogger(t), Server: srv, WantUID: -1})
	t.Cleanup(func() {
		h.Close()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	url := f.URL() + "/mcp"

	// The session's bridge subscribes for its host at initialize.
	var subs []uint64
	start := func(name string) *testHost {
		host := newTestHost(t, url, name)
		host.initialize()
		subs = append(subs, newSubscription(t, srv, subs...))
		return host
	}
	subscriber, closer, stayer := start("subscriber"), start("closer"), start("stayer")
	if code, body := subscriber.post(`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"fake://hello"}}`); code != 200 || !strings.Contains(body, `"result"`) {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	closeGET := closer.openGET()
	closeStayer := stayer.openGET()
	defer closeStayer()
	names := []string{"subscriber", "closer", "stayer"}
	if apps, open := listed(t, srv, names, subs...); !apps["subscriber"] || !apps["closer"] || !apps["stayer"] || len(open) != 3 {
		t.Fatalf("status lists apps %v and subscriptions %v, want the 3 hosts' (%v)", apps, open, subs)
	}

	closeGET()
	subscriber.exit()
	closer.exit()
	gone := time.Now()
	waitFor(t, "the gone hosts' sessions and subscriptions to end", func() bool {
		apps, open := listed(t, srv, names, subs...)
		return !apps["subscriber"] && !apps["closer"] && !open[fmt.Sprint(subs[0])] && !open[fmt.Sprint(subs[1])]
	})
	// Generous: the bound, the janitor's tick and a loaded machine.
	if took := time.Since(gone); took > idle+5*time.Second {
		t.Errorf("gone hosts' sessions ended after %v, want within about %v", took, idle+idle/4)
	}
	time.Sleep(2 * idle)
	if apps, open := listed(t, srv, names, subs...); !apps["stayer"] || !open[fmt.Sprint(subs[2])] {
		t.Errorf("host with its GET stream open: apps %v, subscriptions %v; want its app and subscription listed", apps, open)
	}
	if code, _ := subscriber.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`); code != 404 {
		t.Errorf("ping in the ended session: %d, want 404", code)
	}
	if code, body := stayer.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`); code != 200 {
		t.Errorf("ping in the open session: %d %s, want 200", code, body)
	}
}

// subscriptionIDs are the ids of the service's open subscriptions.
func subscriptionIDs(t *testing.T, srv *core.Service) []uint64 {
	t.Helper()
	m, err := srv.Subscriptions()
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, st := range m.Streams() {
		ids = append(ids, st.ID)
	}
	return ids
}
