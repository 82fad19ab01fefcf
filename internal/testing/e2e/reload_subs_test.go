package e2e

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// subStream is one app's Subscribe stream, read by its own goroutine.
type subStream struct {
	ack    *mcpdv1.SubscriptionAck
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []*mcpdv1.SubscriptionEvent
	err    error // how the stream ended (nil while open or on io.EOF)
	ended  bool
}

// openSub subscribes on a new connection and waits for the acknowledgement.
func openSub(t *testing.T, d *daemon, req *mcpdv1.SubscribeRequest) *subStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := d.client().Subscribe(ctx, req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil || first.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK {
		cancel()
		t.Fatalf("first event %v, %v; want the acknowledgement", first, err)
	}
	s := &subStream{ack: first.GetAck(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			ev, err := st.Recv()
			s.mu.Lock()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					s.err = err
				}
				s.ended = true
				s.mu.Unlock()
				return
			}
			s.events = append(s.events, ev)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

// find returns the first received event matching f, or nil.
func (s *subStream) find(f func(*mcpdv1.SubscriptionEvent) bool) *mcpdv1.SubscriptionEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.events {
		if f(ev) {
			return ev
		}
	}
	return nil
}

func (s *subStream) end() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended, s.err
}

func stateEv(server, state string) func(*mcpdv1.SubscriptionEvent) bool {
	return func(ev *mcpdv1.SubscriptionEvent) bool {
		return ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE &&
			ev.GetServer() == server && ev.GetState() == state
	}
}

func kindFrom(kind mcpdv1.SubscriptionEventKind, server string, synthetic bool) func(*mcpdv1.SubscriptionEvent) bool {
	return func(ev *mcpdv1.SubscriptionEvent) bool {
		return ev.GetKind() == kind && ev.GetServer() == server && ev.GetSynthetic() == synthetic
	}
}

func ackServers(a *mcpdv1.SubscriptionAck) []string {
	var out []string
	for _, s := range a.GetServers() {
		out = append(out, s.GetServer())
	}
	return out
}

// triggerUntil calls the fake's "changed" tool on server until the stream
// has an event matching f. (A listen is acknowledged a moment after the
// child registered it, and the child's notification is dropped before the
// acknowledgement: so trigger again rather than assume.) It returns the
// tool's last answer ("notified N listens").
func triggerUntil(t *testing.T, d *daemon, server, args string, s *subStream, f func(*mcpdv1.SubscriptionEvent) bool) string {
	t.Helper()
	c := d.client()
	last := ""
	poll(t, "an event triggered on "+server, func() (bool, error) {
		if s.find(f) != nil {
			return true, nil
		}
		resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: server, Tool: "changed", ArgumentsJson: args})
		if err != nil {
			return false, err
		}
		last = text(t, resp)
		return false, nil
	})
	return last
}

// A reload seen by subscribed apps, with real children behind a real mcpd:
// a stream watching every server picks up the added server (an "added"
// event, then its notifications over one upstream listen); streams that
// named a removed server get a "removed" event and keep their other
// servers, and a stream that named only that server ends with an error
// naming it; a server whose process identity changed is restarted with the
// subscriptions re-sent (a "restarted" event with the new pid, then updates
// from the new process).
func TestReloadSubscriptions(t *testing.T) {
	skipShort(t)
	d := startWith(t, map[string]entry{"a": {"dual", nil}, "b": {"dual", nil}, "c": {"dual", nil}})
	c := d.client()

	all := openSub(t, d, &mcpdv1.SubscribeRequest{ToolsListChanged: true})
	if got := strings.Join(ackServers(all.ack), ","); got != "a,b,c" {
		t.Fatalf("all-servers stream acknowledged %q, want a,b,c", got)
	}
	named := openSub(t, d, &mcpdv1.SubscribeRequest{Servers: []string{"b", "c"}, ToolsListChanged: true,
		ResourceUris: []string{"fake://hello"}})
	onlyB := openSub(t, d, &mcpdv1.SubscribeRequest{Servers: []string{"b"}, ToolsListChanged: true})
	var before map[string]*mcpdv1.ServerStatus
	poll(t, "watched servers started", func() (bool, error) {
		before = servers(d.status(c))
		return ready(before["a"]) && ready(before["b"]) && ready(before["c"]), nil
	})

	// Remove b, change c's process identity (its protocol), add d.
	saveAsEditor(t, d.config, configJSON(t, map[string]entry{
		"a": {"dual", nil},
		"c": {"dual", map[string]any{"protocol": "modern"}},
		"d": {"dual", nil},
	}))

	// Added: the all-servers stream hears of d, and d's notifications
	// reach it over exactly one listen opened for it.
	poll(t, "added event for d", func() (bool, error) { return all.find(stateEv("d", "added")) != nil, nil })
	got := triggerUntil(t, d, "d", `{"kind":"tools"}`, all,
		kindFrom(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED, "d", false))
	if got != "notified 1 listens" {
		t.Errorf("d's child answered %q, want one upstream listen for the apps", got)
	}
	if named.find(stateEv("d", "added")) != nil {
		t.Error("a stream naming b and c heard of the added server d")
	}

	// Removed: every stream watching b hears it, with the reason.
	for name, s := range map[string]*subStream{"all": all, "named": named, "onlyB": onlyB} {
		poll(t, name+" removed event for b", func() (bool, error) { return s.find(stateEv("b", "removed")) != nil, nil })
		if ev := s.find(stateEv("b", "removed")); !strings.Contains(ev.GetError(), `"b" was removed from the config`) {
			t.Errorf("%s: removed event error %q, want the reason", name, ev.GetError())
		}
	}
	// The stream that watched only b ends, naming it.
	poll(t, "the b-only stream ended", func() (bool, error) { ended, _ := onlyB.end(); return ended, nil })
	if _, err := onlyB.end(); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `"b" was removed`) {
		t.Errorf("b-only stream ended with %v, want UNAVAILABLE naming b", err)
	}
	if onlyB.find(kindFrom(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR, "b", false)) == nil {
		t.Error("b-only stream got no error event before it ended")
	}

	// Changed identity: c restarts, the named stream hears restarted with
	// the new pid and gets updates of its URI from the new process, which
	// saw exactly one listen (the union of both streams).
	var after *mcpdv1.ServerStatus
	poll(t, "c restarted", func() (bool, error) {
		after = d.serverStatus(c, "c")
		return ready(after) && after.GetPid() != before["c"].GetPid(), nil
	})
	poll(t, "restarted event for c", func() (bool, error) {
		ev := named.find(kindFrom(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED, "c", false))
		return ev != nil && ev.GetPid() == after.GetPid(), nil
	})
	if named.find(kindFrom(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED, "c", true)) == nil {
		t.Error("no synthetic tools list_changed for c after its restart")
	}
	updated := func(ev *mcpdv1.SubscriptionEvent) bool {
		return kindFrom(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED, "c", false)(ev) && ev.GetUri() == "fake://hello"
	}
	if got := triggerUntil(t, d, "c", `{"uri":"fake://hello"}`, named, updated); got != "notified 1 listens" {
		t.Errorf("c's new child answered %q, want the one re-sent listen", got)
	}
	if d.serverStatus(c, "c").GetPid() != after.GetPid() {
		t.Error("c restarted again")
	}

	// The streams that kept servers are still open.
	for name, s := range map[string]*subStream{"all": all, "named": named} {
		if ended, err := s.end(); ended {
			t.Errorf("%s stream ended: %v", name, err)
		}
	}
	poll(t, "removed server's child gone", func() (bool, error) { return !alive(int(before["b"].GetPid())), nil })
}
