package remote_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
)

// exercise lists, calls with progress, reads, cancels and subscribes on c.
func exercise(t *testing.T, srv *upstream.Process, c *client) {
	t.Helper()
	if !strings.Contains(string(c.mustCall(t, "tools/list", `{}`)), `"echo"`) {
		t.Fatal("tools/list has no echo")
	}
	var mu sync.Mutex
	var progress []string
	res := c.mustCall(t, "tools/call", `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"app-tok"}}`)
	_ = res
	resp, err := c.call(t, 20*time.Second, "tools/call", `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"app-tok"}}`,
		func(p json.RawMessage) {
			mu.Lock()
			progress = append(progress, string(p))
			mu.Unlock()
		})
	if err != nil || resp.Error != nil {
		t.Fatalf("progress: %v %v", err, resp)
	}
	if !strings.Contains(string(resp.Result), "done 3") {
		t.Fatalf("progress result: %s", resp.Result)
	}
	mu.Lock()
	if len(progress) != 3 || !strings.Contains(progress[0], `"app-tok"`) {
		t.Errorf("progress notifications: %q", progress)
	}
	mu.Unlock()
	if r := c.mustCall(t, "resources/read", `{"uri":"test://a"}`); !strings.Contains(string(r), "hello a") {
		t.Fatalf("resources/read: %s", r)
	}
	// Cancel: the deadline passes during a long call; the server hears of it.
	start := time.Now()
	_, err = c.call(t, 300*time.Millisecond, "tools/call", `{"name":"sleep","arguments":{"ms":20000}}`, nil)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("sleep past the deadline: %v after %s", err, time.Since(start))
	}
	srv.WaitLine(t, "sleep cancelled 20000")
	// The Conn still serves after the cancel.
	if r := c.mustCall(t, "tools/call", `{"name":"echo","arguments":{"message":"après"}}`); !strings.Contains(string(r), "après") {
		t.Fatalf("echo: %s", r)
	}
}

func TestGoSDKStatefulLegacy(t *testing.T) {
	srv := startGoSDK(t)
	c := connect(t, remote.Options{URL: srv.URL}, session.ProtocolAuto)
	if c.info.Era != session.EraLegacy {
		t.Fatalf("era %s, want legacy (the stateful handler lists no modern version)", c.info.Era)
	}
	exercise(t, srv, c)
	// Subscribe, then an update arrives (on the GET stream).
	c.mustCall(t, "resources/subscribe", `{"uri":"test://a"}`)
	c.mustCall(t, "tools/call", `{"name":"touch","arguments":{"uri":"test://a"}}`)
	n := c.waitNote(t, "notifications/resources/updated")
	if !strings.Contains(string(n.Params), "test://a") {
		t.Fatalf("update: %s", n.Params)
	}
	// A list change announced while the GET stream is open.
	c.mustCall(t, "tools/call", `{"name":"add_tool","arguments":{"name":"late"}}`)
	c.waitNote(t, "notifications/tools/list_changed")
	// Stop ends the session with DELETE.
	if err := c.conn.Stop(); err != nil {
		t.Fatal(err)
	}
	srv.WaitLine(t, "recv DELETE")
}

func TestGoSDKStatefulJSON(t *testing.T) {
	srv := startGoSDK(t, "-json")
	c := connect(t, remote.Options{URL: srv.URL}, session.ProtocolLegacy)
	if r := c.mustCall(t, "tools/call", `{"name":"echo","arguments":{"message":"hi"}}`); !strings.Contains(string(r), `"hi"`) {
		t.Fatalf("echo: %s", r)
	}
}

func TestGoSDKStatelessModern(t *testing.T) {
	srv := startGoSDK(t, "-stateless")
	c := connect(t, remote.Options{URL: srv.URL}, session.ProtocolAuto)
	if c.info.Era != session.EraModern {
		t.Fatalf("era %s, want modern", c.info.Era)
	}
	exercise(t, srv, c)
	srv.WaitLine(t, "recv POST tools/call")

	// subscriptions/listen is a long SSE POST.
	got := make(chan session.Notification, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.sess.Listen(ctx, json.RawMessage(`{"resourceSubscriptions":["test://a"],"toolsListChanged":true}`),
		func(n session.Notification) { got <- n })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(l.Ack()), "test://a") {
		t.Fatalf("ack: %s", l.Ack())
	}
	c.mustCall(t, "tools/call", `{"name":"touch","arguments":{"uri":"test://a"}}`)
	for {
		select {
		case n := <-got:
			if n.Method == "notifications/resources/updated" {
				goto updated
			}
		case <-ctx.Done():
			t.Fatal("no update on the listen")
		}
	}
updated:
	l.Cancel("done")
	select {
	case <-l.Closed():
	case <-ctx.Done():
		t.Fatal("the cancelled listen was not closed")
	}
	if err := l.Err(); err == nil {
		t.Fatal("listen has no error after Cancel")
	}
}
