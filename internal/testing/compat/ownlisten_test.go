package compat

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// count asks the go-sdk server how many tools/list it has served.
func (d *daemon) count(t *testing.T, server string) int {
	t.Helper()
	n, err := strconv.Atoi(d.callTool(t, server, "count", "{}"))
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

func (d *daemon) serverStatus(t *testing.T, name string) (*mcpdv1.GetStatusResponse, *mcpdv1.ServerStatus) {
	t.Helper()
	st, err := d.client.GetStatus(context.Background(), &mcpdv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.GetServers() {
		if s.GetName() == name {
			return st, s
		}
	}
	t.Fatalf("no server %q in status", name)
	return nil, nil
}

// TestCacheAPIModernOwnListen: with no app subscribed, mcpd keeps its own
// listen for the list kinds a modern go-sdk server (ttlMs 0) advertises as
// listChanged, so its tools/list is asked once, not once per request; the
// list_changed on that listen invalidates it; the listen is not an app in
// status and not demand (a killed child is not restarted for it), and it is
// re-opened on the next process, where caching resumes.
func TestCacheAPIModernOwnListen(t *testing.T) {
	d := startDaemon(t, zaptest.NewLogger(t), supervisor.Options{
		Specs: []supervisor.Spec{{Name: "m", Command: gosdkBin, Protocol: session.ProtocolModern}},
	})
	hit := mcpdv1.CacheStatus_CACHE_STATUS_HIT
	fetched := mcpdv1.CacheStatus_CACHE_STATUS_FETCHED

	// The first list starts the server lazily; mcpd's listen follows its
	// ready event, and from its acknowledgement on lists are kept.
	waitFor(t, "tools/list cached under mcpd's own listen", func() bool {
		return d.listTools(t, "m").GetCache() == hit
	})
	if got := d.recvCount(t, "m", "subscriptions/listen"); got != 1 {
		t.Fatalf("the server read %d subscriptions/listen, want 1", got)
	}
	st, srv := d.serverStatus(t, "m")
	if len(st.GetSubscriptions()) != 0 {
		t.Fatalf("status lists subscriptions %v, want none", st.GetSubscriptions())
	}

	t.Run("two sequential lists, one upstream", func(t *testing.T) {
		if _, err := d.client.ClearCache(context.Background(), &mcpdv1.ClearCacheRequest{Server: "m"}); err != nil {
			t.Fatal(err)
		}
		before := d.count(t, "m")
		if l := d.listTools(t, "m"); l.GetCache() != fetched {
			t.Fatalf("first list after clear: %v", l.GetCache())
		}
		if l := d.listTools(t, "m"); l.GetCache() != hit {
			t.Fatalf("second list: %v", l.GetCache())
		}
		if got := d.count(t, "m") - before; got != 1 {
			t.Fatalf("the server served %d tools/list for two lists, want 1", got)
		}
	})

	t.Run("list_changed invalidates", func(t *testing.T) {
		cached := d.listTools(t, "m")
		if cached.GetCache() != hit || strings.Contains(cached.GetItemsJson(), "own_tool") {
			t.Fatalf("before: %v", cached)
		}
		before := d.count(t, "m")
		d.callTool(t, "m", "add_tool", `{"name":"own_tool"}`)
		// No app hears the notification here: every list until it arrives
		// is a hit on the old list (none asks upstream), the first one
		// after it is fetched and has the new tool.
		var l *mcpdv1.ServerList
		waitFor(t, "the new tool listed", func() bool {
			l = d.listTools(t, "m")
			return strings.Contains(l.GetItemsJson(), `"own_tool"`)
		})
		if l.GetCache() != fetched {
			t.Fatalf("the list with the new tool came %v", l.GetCache())
		}
		if got := d.count(t, "m") - before; got != 1 {
			t.Fatalf("the server served %d tools/list around one list_changed, want 1", got)
		}
		if again := d.listTools(t, "m"); again.GetCache() != hit || again.GetItemsJson() != l.GetItemsJson() {
			t.Fatalf("then: %v", again)
		}
	})

	t.Run("no stale read once the notification is delivered", func(t *testing.T) {
		// An app watching tools list changes: its filter is already in
		// mcpd's listen, so nothing is re-opened.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stream, err := d.client.Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{"m"}, ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		if ack, err := stream.Recv(); err != nil || !ack.GetAck().GetServers()[0].GetToolsListChanged() {
			t.Fatalf("ack %v, %v", ack, err)
		}
		if l := d.listTools(t, "m"); l.GetCache() != hit {
			t.Fatalf("before: %v", l.GetCache())
		}
		d.callTool(t, "m", "add_tool", `{"name":"watched_tool"}`)
		for {
			ev, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED {
				break
			}
		}
		if l := d.listTools(t, "m"); l.GetCache() != fetched || !strings.Contains(l.GetItemsJson(), `"watched_tool"`) {
			t.Fatalf("after the notification: %v", l)
		}
		cancel()
		// The stream's end reaches mcpd after cancel returns; until status
		// drops it, the app's interest is still demand (a crash now would
		// rightly be restarted for it).
		waitFor(t, "the app's stream gone from status", func() bool {
			st, _ := d.serverStatus(t, "m")
			return len(st.GetSubscriptions()) == 0
		})
		if got := d.recvCount(t, "m", "subscriptions/listen"); got != 1 {
			t.Fatalf("the server read %d subscriptions/listen, want 1 (the app's filter is in mcpd's)", got)
		}
	})

	t.Run("not demand; re-opened after a restart", func(t *testing.T) {
		listens := d.recvCount(t, "m", "subscriptions/listen")
		pid := int(srv.GetPid())
		if pid <= 0 {
			t.Fatalf("no pid: %v", srv)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Without callers or app subscriptions the crashed child is not
		// restarted: it ends stopped, not starting again for mcpd's listen.
		waitFor(t, "the killed server stopped", func() bool {
			_, s := d.serverStatus(t, "m")
			return s.GetState() == mcpdv1.ServerState_SERVER_STATE_STOPPED
		})
		if _, s := d.serverStatus(t, "m"); s.GetRestarts() != 0 || s.GetPid() != 0 {
			t.Fatalf("after the kill: %v", s)
		}
		// The next list starts it; the listen is re-sent to the new process
		// and caching resumes.
		if l := d.listTools(t, "m"); l.GetCache() != fetched {
			t.Fatalf("first list on the new process: %v", l.GetCache())
		}
		waitFor(t, "caching resumed on the new process", func() bool {
			return d.listTools(t, "m").GetCache() == hit
		})
		_, s := d.serverStatus(t, "m")
		if s.GetPid() == int64(pid) || s.GetPid() == 0 {
			t.Fatalf("not a new process: %v", s)
		}
		if got := d.recvCount(t, "m", "subscriptions/listen"); got != listens+1 {
			t.Fatalf("the server read %d subscriptions/listen in all, want %d (one more on the new process)", got, listens+1)
		}
		before := d.count(t, "m")
		for range 3 {
			if l := d.listTools(t, "m"); l.GetCache() != hit {
				t.Fatalf("list on the new process: %v", l.GetCache())
			}
		}
		if got := d.count(t, "m") - before; got != 0 {
			t.Fatalf("the new process served %d tools/list for cached lists", got)
		}
	})
}
