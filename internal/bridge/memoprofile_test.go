package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// routingBackend is profileBackend whose servers each list one tool of
// their own name, and which tells the server each call reached.
type routingBackend struct {
	profileBackend
	called chan string
}

func (r *routingBackend) List(_ context.Context, server, method string, _ service.Options) ([]service.ServerList, error) {
	if method != "tools/list" {
		return nil, nil
	}
	return []service.ServerList{{Server: server,
		Items: json.RawMessage(fmt.Sprintf(`[{"name":"%s_tool","inputSchema":{"type":"object"}}]`, server))}}, nil
}

func (r *routingBackend) Send(_ context.Context, req service.Request, _ func(service.Event)) (*service.Response, error) {
	r.called <- req.Server
	return &service.Response{Server: req.Server, Result: json.RawMessage(`{"content":[]}`)}, nil
}

// A bridge of a whole profile that loses a server and gains it back lists
// the same items as before the change, and calls of the regained server's
// tools reach it: the list made before the change is not taken for the
// routes of the one after (followProfile forgets it with the routes).
func TestListMemoForgottenWhenProfileServersChange(t *testing.T) {
	be := &routingBackend{
		profileBackend: profileBackend{servers: []string{"s", "t"}, opened: make(chan int, 4), proceed: make(chan struct{})},
		called:         make(chan string, 4),
	}
	close(be.proceed)
	sink := &recordSink{got: make(chan scopedMsg, 64)}
	send, stop := serveHostWith(t, be, sink, Options{All: true, Profile: "p", Prefix: profile.PrefixOnCollision})
	defer stop()
	request := func(id, line string) scopedMsg {
		t.Helper()
		send(line)
		m := sink.next(t)
		for ; m.scope != id; m = sink.next(t) {
		}
		return m
	}
	list := func(id string) string {
		t.Helper()
		m := request(`"`+id+`"`, `{"jsonrpc":"2.0","id":"`+id+`","method":"tools/list"}`)
		if m.msg.Result == nil {
			t.Fatalf("tools/list answered %v", m.msg.Error)
		}
		return string(m.msg.Result)
	}
	setServers := func(stream int, servers ...string) {
		t.Helper()
		be.mu.Lock()
		be.servers = servers
		be.mu.Unlock()
		be.stream(stream) <- &service.SubscriptionEvent{Server: "s", Synthetic: true, Kind: service.ToolsListChanged}
		waitFor(t, be.opened, fmt.Sprintf("the stream reopened for %v", servers))
	}

	request("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	waitFor(t, be.opened, "the first stream")
	first := list("l1")
	if !strings.Contains(first, `"t_tool"`) || !strings.Contains(first, `"s_tool"`) {
		t.Fatalf("first list: %s", first)
	}
	setServers(0, "s")
	setServers(1, "s", "t")
	if again := list("l2"); again != first {
		t.Fatalf("once t is back: %s, want %s", again, first)
	}
	m := request("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t_tool","arguments":{}}}`)
	if m.msg.Error != nil {
		t.Fatalf("t_tool's call: %v", m.msg.Error)
	}
	if got := waitFor(t, be.called, "the call"); got != "t" {
		t.Fatalf("t_tool's call reached %q, want t", got)
	}
}
