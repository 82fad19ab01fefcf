package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

func sessionRequest(method, params string) *session.Request {
	r := &session.Request{Method: method}
	if params != "" {
		r.Params = json.RawMessage(params)
	}
	return r
}

// callTool calls a tool of server through the supervisor.
func (d *daemon) callTool(server, tool, args string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp, err := d.sup.Call(ctx, server, sessionRequest("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)), supervisor.CallOptions{})
	if err != nil {
		d.t.Fatalf("call %s: %v", tool, err)
	}
	if resp.Error != nil {
		d.t.Fatalf("call %s: %v", tool, resp.Error)
	}
}

// Two apps on the same URI of a legacy server: one resources/subscribe;
// the first leaving sends nothing; the second's connection dropping sends
// exactly one resources/unsubscribe.
func TestLegacySharedURIRefCount(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	tests := []struct {
		name, uri, recv string
		spec            func(t *testing.T) supervisor.Spec
	}{
		{"fake", "fake://hello", "recv resources/", func(*testing.T) supervisor.Spec { return fakeSpec("s", "legacy") }},
		{"server-memory", "memory://knowledge-graph", "tap recv resources/", func(t *testing.T) supervisor.Spec { return memorySpec(t, "s") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{tc.spec(t)}})
			sub, unsub := tc.recv+"subscribe", tc.recv+"unsubscribe"
			req := &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: []string{tc.uri}}
			c1, _ := d.dial()
			c2, conn2 := d.dial()
			a, _ := subscribe(t, c1, req, true)
			b, _ := subscribe(t, c2, req, true)
			for _, w := range []*watcher{a, b} {
				acks := w.ack.GetServers()
				if len(acks) != 1 || acks[0].GetEra() != "legacy" || len(acks[0].GetResourceUris()) != 1 {
					t.Fatalf("ack = %v, want the URI accepted by the legacy server", acks)
				}
			}
			d.flushStderr("s", "tools/list")
			if n := d.stderrCount("s", sub); n != 1 {
				t.Fatalf("child saw %d resources/subscribe, want 1", n)
			}

			a.close() // the first app leaves
			waitFor(t, "one stream left", func() bool { return d.streams() == 1 })
			// An update of b is applied after a's leaving by the same loop:
			// once acknowledged, any unsubscribe would have been sent.
			if _, err := c2.UpdateSubscription(context.Background(), &mcpdv1.UpdateSubscriptionRequest{
				SubscriptionId: b.ack.GetSubscriptionId(), AddResourceUris: []string{tc.uri}}); err != nil {
				t.Fatal(err)
			}
			d.flushStderr("s", "tools/list")
			if n := d.stderrCount("s", unsub); n != 0 {
				t.Fatalf("child saw %d resources/unsubscribe while an app still watches, want 0", n)
			}

			conn2.Close() // the second app's connection drops without a word
			waitFor(t, "no stream left", func() bool { return d.streams() == 0 })
			waitFor(t, "resources/unsubscribe", func() bool { return d.stderrCount("s", unsub) >= 1 })
			d.flushStderr("s", "tools/list")
			if n, m := d.stderrCount("s", unsub), d.stderrCount("s", sub); n != 1 || m != 1 {
				t.Fatalf("child saw %d subscribe and %d unsubscribe, want 1 and 1", m, n)
			}
		})
	}
}

// Modern servers: a union change opens the new listen before the old one
// is cancelled (at the next change), costs one listen, and every
// notification arrives exactly once: with the
// fake (which keeps concurrent listens apart) while switches happen
// concurrently, with the go-sdk server after each switch (it keeps one
// registration per session, see upstream.go).
func TestModernListenSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	tests := []struct {
		name       string
		spec       func(t *testing.T) supervisor.Spec
		touch      func(d *daemon)
		concurrent bool
	}{
		{"fake", func(*testing.T) supervisor.Spec { return fakeSpec("g", "modern") },
			func(d *daemon) { d.callTool("g", "changed", `{"uri":"test://a"}`) }, true},
		{"gosdk", func(t *testing.T) supervisor.Spec { return gosdkSpec(t, "g") },
			func(d *daemon) { d.callTool("g", "touch", `{"uri":"test://a"}`) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{tc.spec(t)}})
			c, _ := d.dial()
			a, _ := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"g"}, ResourceUris: []string{"test://a"}}, true)
			if acks := a.ack.GetServers(); len(acks) != 1 || acks[0].GetEra() != "modern" || fmt.Sprint(acks[0].GetResourceUris()) != "[test://a]" {
				t.Fatalf("ack = %v, want test://a acknowledged by the modern listen", acks)
			}
			b, _ := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"g"}, ResourceUris: []string{"test://b"}}, true)

			// The child's stderr order: the second listen arrives, and the
			// first is not cancelled (yet).
			d.flushStderr("g", "recv tools/list")
			lines, _ := d.sup.Logs("g", 1000)
			var order []string
			for _, l := range lines {
				for _, m := range []string{"subscriptions/listen", "notifications/cancelled"} {
					if strings.HasPrefix(l.Text, "recv "+m) {
						order = append(order, m)
					}
				}
			}
			// A change costs one listen: the one replaced stays open until
			// the next change, which cancels it before its own listen.
			if want := "[subscriptions/listen subscriptions/listen]"; fmt.Sprint(order) != want {
				t.Fatalf("child saw %v, want %s", order, want)
			}

			const rounds = 20
			toggle := func(i int) {
				req := &mcpdv1.UpdateSubscriptionRequest{SubscriptionId: b.ack.GetSubscriptionId()}
				if i%2 == 0 {
					req.RemoveResourceUris = []string{"test://b"}
				} else {
					req.AddResourceUris = []string{"test://b"}
				}
				if _, err := c.UpdateSubscription(context.Background(), req); err != nil {
					t.Error(err)
				}
			}
			if tc.concurrent {
				var wg sync.WaitGroup
				wg.Go(func() {
					for i := range rounds {
						toggle(i)
					}
				})
				for range rounds {
					tc.touch(d)
				}
				wg.Wait()
			} else {
				for i := range rounds {
					toggle(i)
					tc.touch(d)
				}
			}
			waitFor(t, "every touch delivered", func() bool { return a.count(realUpdate("test://a")) >= rounds })
			tc.touch(d) // a sentinel: anything earlier is in by now
			waitFor(t, "sentinel delivered", func() bool { return a.count(realUpdate("test://a")) >= rounds+1 })
			if n := a.count(realUpdate("test://a")); n != rounds+1 {
				t.Fatalf("a received %d updates of test://a, want %d (one per touch)", n, rounds+1)
			}
			if n := d.stderrCount("g", "recv subscriptions/listen"); n != rounds+2 {
				t.Fatalf("child saw %d listens, want %d: one per change", n, rounds+2)
			}
		})
	}
}

// SIGKILL the child while three apps watch: all get restarted, then an
// update triggered after the restart; the child saw the subscription again.
func TestRestartResendsSubscriptions(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	tests := []struct {
		name, uri, resent string
		spec              func(t *testing.T) supervisor.Spec
		touch             func(d *daemon)
	}{
		{"legacy-fake", "fake://hello", "recv resources/subscribe", func(*testing.T) supervisor.Spec { return fakeSpec("s", "legacy") },
			func(d *daemon) { d.callTool("s", "changed", `{"uri":"fake://hello"}`) }},
		{"modern-gosdk", "test://a", "recv subscriptions/listen", func(t *testing.T) supervisor.Spec { return gosdkSpec(t, "s") },
			func(d *daemon) { d.callTool("s", "touch", `{"uri":"test://a"}`) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{tc.spec(t)}})
			req := &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: []string{tc.uri}, ToolsListChanged: true}
			var ws []*watcher
			for range 3 {
				c, _ := d.dial()
				w, _ := subscribe(t, c, req, true)
				ws = append(ws, w)
			}
			st, err := d.sup.ServerStatus("s")
			if err != nil || st.Pid == 0 {
				t.Fatalf("status = %+v, %v; want a running child", st, err)
			}
			if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			restarted := kindIs(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED)
			for i, w := range ws {
				waitFor(t, fmt.Sprintf("app %d restarted", i), func() bool { return w.count(restarted) == 1 })
				synthetic := func(ev *mcpdv1.SubscriptionEvent) bool {
					return ev.GetSynthetic() && ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED
				}
				waitFor(t, "synthetic tools list_changed", func() bool { return w.count(synthetic) == 1 })
			}
			tc.touch(d)
			for i, w := range ws {
				waitFor(t, fmt.Sprintf("app %d update after restart", i), func() bool { return w.count(realUpdate(tc.uri)) == 1 })
				evs, _ := w.snapshot()
				seenRestart := false
				for _, ev := range evs {
					seenRestart = seenRestart || restarted(ev)
					if realUpdate(tc.uri)(ev) && !seenRestart {
						t.Fatalf("app %d: update before the restarted event", i)
					}
				}
			}
			if n := d.stderrCount("s", tc.resent); n != 2 {
				t.Fatalf("child logs show %q %d times, want 2 (first process and re-send)", tc.resent, n)
			}
		})
	}
}

// A child that dies right after every re-send ends in crashloop, and the
// watchers get an error naming the server and the reason.
func TestCrashLoopAfterResendFailsSubscriptions(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	d := newDaemon(t, supervisor.Options{
		Specs:        []supervisor.Spec{fakeSpec("doomed", "legacy,exitonsubscribe")},
		CrashLoopMax: 3, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond,
	})
	c, _ := d.dial()
	req := &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ResourceUris: []string{"fake://hello"}, ServerState: true}
	w, _ := subscribe(t, c, req, true)
	isErr := kindIs(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR)
	waitFor(t, "error event", func() bool { return w.count(isErr) == 1 })
	<-w.done
	evs, err := w.snapshot()
	last := evs[len(evs)-1]
	if !isErr(last) || !strings.Contains(last.GetError(), `"doomed"`) || !strings.Contains(last.GetError(), "crash-looping") {
		t.Fatalf("last event = %v, want an error naming the server and the crash loop", last)
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("stream ended with %v, want UNAVAILABLE", err)
	}
	// A child that died during the re-send is never announced as the
	// restarted one after its exit.
	gone := map[int64]bool{}
	for _, ev := range evs {
		switch {
		case ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE && ev.GetState() == "exited":
			gone[ev.GetPid()] = true
		case ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED && gone[ev.GetPid()]:
			t.Fatalf("restarted event for pid %d after its exit: %v", ev.GetPid(), evs)
		}
	}
	if n := d.stderrCount("doomed", "exit on subscribe"); n != 3 {
		t.Fatalf("the child died %d times on subscribe, want 3", n)
	}
	if st, _ := d.sup.ServerStatus("doomed"); st.State != supervisor.StateCrashLoop {
		t.Fatalf("state = %s, want crashloop", st.State)
	}
	if d.streams() != 0 {
		t.Fatalf("%d streams left open", d.streams())
	}
}

// A stalled app (never reads) while 100 000 updates of 10 URIs flow: its
// queue stays bounded, the other apps receive everything, and the stalled
// one finally sees the latest state of each URI.
func TestStalledAppIsBoundedAndCoalesced(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	const (
		total   = 100000
		batch   = 1000
		numURIs = 10
	)
	d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{fakeSpec("s", "legacy,quiet")}})
	var uris []string
	for i := range numURIs {
		uris = append(uris, fmt.Sprintf("fake://r/%d", i))
	}
	req := &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: uris}
	// A small fixed flow-control window, so gRPC itself cannot absorb the flood.
	cs, _ := d.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	stalled, resume := subscribe(t, cs, req, false)
	var fast []*watcher
	for range 2 {
		c, _ := d.dial()
		w, _ := subscribe(t, c, req, true)
		w.mu.Lock()
		w.discard = true
		w.mu.Unlock()
		fast = append(fast, w)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	isUpdate := kindIs(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED)
	for start := 0; start < total; start += batch {
		d.callTool("s", "burst", fmt.Sprintf(`{"n":%d,"uris":%d,"start":%d}`, batch, numURIs, start))
		for i, w := range fast {
			waitFor(t, fmt.Sprintf("fast app %d caught up to %d", i, start+batch), func() bool {
				return w.kindCount(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED) == start+batch
			})
		}
	}
	var stalledStats *mcpdv1.SubscriptionStatus
	resp, err := cs.GetStatus(context.Background(), &mcpdv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range resp.GetSubscriptions() {
		if s.GetSubscriptionId() == stalled.ack.GetSubscriptionId() {
			stalledStats = s
		}
		if s.GetSubscriptionId() != stalled.ack.GetSubscriptionId() && (s.GetCoalesced() != 0 || s.GetDropped() != 0) {
			t.Errorf("fast app %d lost events: %v", s.GetSubscriptionId(), s)
		}
	}
	if stalledStats == nil || stalledStats.GetQueued() > 1024 || stalledStats.GetQueuedBytes() > 8<<20 ||
		stalledStats.GetCoalesced() == 0 || stalledStats.GetLagged() {
		t.Fatalf("stalled app status = %v; want a bounded, coalesced, not lagged queue", stalledStats)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("heap grew by %d MiB during the flood", grown>>20)
	}

	// The stalled app reads now: for every URI the last update it gets
	// carries the final sequence number.
	close(resume)
	final := map[string]int{}
	for i := range numURIs {
		final[uris[i]] = total - numURIs + i
	}
	seqOf := func(ev *mcpdv1.SubscriptionEvent) int {
		var p struct{ Seq int }
		_ = json.Unmarshal([]byte(ev.GetParamsJson()), &p)
		return p.Seq
	}
	waitFor(t, "stalled app sees the latest state", func() bool {
		last := map[string]int{}
		evs, _ := stalled.snapshot()
		for _, ev := range evs {
			if isUpdate(ev) {
				last[ev.GetUri()] = seqOf(ev)
			}
		}
		for u, s := range final {
			if last[u] != s {
				return false
			}
		}
		return true
	})
}

// 100 subscribers: every one receives each event.
func TestHundredSubscribers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{fakeSpec("s", "legacy,quiet")}})
	req := &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ToolsListChanged: true, ResourceUris: []string{"fake://hello"}}
	var ws []*watcher
	for i := range 100 {
		c, _ := d.dial()
		if i%10 != 0 { // several streams per connection too
			c = ws[len(ws)-1].client
		}
		w, _ := subscribe(t, c, req, true)
		w.client = c
		ws = append(ws, w)
	}
	const events = 5
	for range events {
		d.callTool("s", "changed", `{"kind":"tools"}`)
		d.callTool("s", "changed", `{"uri":"fake://hello"}`)
	}
	tools := func(ev *mcpdv1.SubscriptionEvent) bool {
		return ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED && !ev.GetSynthetic()
	}
	for i, w := range ws {
		waitFor(t, fmt.Sprintf("subscriber %d", i), func() bool {
			return w.count(tools) == events && w.count(realUpdate("fake://hello")) == events
		})
	}
}
