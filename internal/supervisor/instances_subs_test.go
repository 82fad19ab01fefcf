package supervisor

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// eventLog collects what a stream delivers, for waiting on conditions.
type eventLog struct {
	st  *subscriptions.Stream
	evs []subscriptions.Event
}

// until takes events until one matches want (failing after a deadline) and
// returns everything taken so far.
func (l *eventLog) until(t *testing.T, what string, want func(subscriptions.Event) bool) []subscriptions.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !slices.ContainsFunc(l.evs, want) {
		select {
		case <-l.st.Ready():
			evs, _ := l.st.Take(nil)
			for _, ev := range evs {
				l.evs = append(l.evs, *ev)
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s; got %+v", what, l.evs)
		}
	}
	return l.evs
}

func updated(uri string) func(subscriptions.Event) bool {
	return func(ev subscriptions.Event) bool {
		return ev.Kind == subscriptions.KindResourceUpdated && ev.URI == uri
	}
}

func kindIs(k subscriptions.Kind) func(subscriptions.Event) bool {
	return func(ev subscriptions.Event) bool { return ev.Kind == k }
}

func noneOf(t *testing.T, who string, evs []subscriptions.Event, bad func(subscriptions.Event) bool) {
	t.Helper()
	if i := slices.IndexFunc(evs, bad); i >= 0 {
		t.Errorf("%s got another app's event %+v", who, evs[i])
	}
}

// Two apps on a server shared per app each subscribe to a resource and to
// tools list changes: each subscription starts and reaches the app's own
// instance, what one instance announces reaches its app alone, a killed
// instance's child gets the subscriptions again, and an app's instance
// goes with its subscription once the app has gone.
func TestInstanceSubscriptions(t *testing.T) {
	for _, mode := range []string{"legacy", "modern"} {
		t.Run(mode, func(t *testing.T) {
			spec := fakeSpec("per", mode)
			spec.Share = ShareClient
			h := newHarness(t, Options{Specs: []Spec{spec}, InstanceSweep: 10 * time.Millisecond}, nil)
			a, b := &owner{id: 1}, &owner{id: 2}
			scA, scB := a.scope("app-a", ""), b.scope("app-b", "")
			w := subscriptions.Watch{Servers: []string{"per"}, URIs: []string{"file:///x"}, ToolsListChanged: true}
			open := func(app string, sc Scope) *eventLog {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				st, acks, err := h.s.Subscriptions().Subscribe(ctx, subscriptions.AppInfo{Name: app, Scope: sc}, w)
				if err != nil {
					t.Fatalf("Subscribe %s: %v", app, err)
				}
				t.Cleanup(st.Close)
				if len(acks) != 1 || acks[0].Error != "" || !slices.Contains(acks[0].URIs, "file:///x") {
					t.Fatalf("ack of %s: %+v", app, acks)
				}
				return &eventLog{st: st}
			}
			logA, logB := open("app-a", scA), open("app-b", scB)
			if got := instancePids(h.status("per")); len(got) != 2 || got["app-a"] == 0 || got["app-b"] == 0 {
				t.Fatalf("instances after subscribing: %v, want app-a and app-b running", got)
			}
			ctxA, ctxB := WithScope(t.Context(), scA), WithScope(t.Context(), scB)
			change := func(ctx context.Context, args map[string]any) {
				t.Helper()
				if _, err := h.s.Call(ctx, "per", toolCall("changed", args), CallOptions{}); err != nil {
					t.Fatalf("changed %v: %v", args, err)
				}
			}

			change(ctxA, map[string]any{"uri": "file:///x/a"})
			logA.until(t, "app-a's update", updated("file:///x/a"))
			change(ctxB, map[string]any{"uri": "file:///x/b"})
			noneOf(t, "app-b", logB.until(t, "app-b's update", updated("file:///x/b")), updated("file:///x/a"))
			change(ctxA, map[string]any{"kind": "tools"})
			logA.until(t, "app-a's tools list change", kindIs(subscriptions.KindToolsListChanged))
			change(ctxB, map[string]any{"uri": "file:///x/b2"})
			noneOf(t, "app-b", logB.until(t, "app-b's second update", updated("file:///x/b2")), kindIs(subscriptions.KindToolsListChanged))
			change(ctxA, map[string]any{"uri": "file:///x/a2"})
			noneOf(t, "app-a", logA.until(t, "app-a's second update", updated("file:///x/a2")), updated("file:///x/b"))

			// A killed instance's child: its app hears of the restart and
			// its subscription holds on the new child.
			pidA := instancePids(h.status("per"))["app-a"]
			if err := syscall.Kill(pidA, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			logA.until(t, "app-a's restarted event", kindIs(subscriptions.KindRestarted))
			change(ctxA, map[string]any{"uri": "file:///x/a3"})
			logA.until(t, "app-a's update after the restart", updated("file:///x/a3"))
			noneOf(t, "app-b", logB.evs, kindIs(subscriptions.KindRestarted))

			// App a goes: its instance goes, b's stays.
			logA.st.Close()
			a.closed.Store(true)
			waitFor(t, "app-a's instance to go", func() bool {
				got := instancePids(h.status("per"))
				return len(got) == 1 && got["app-b"] != 0
			})
			change(ctxB, map[string]any{"uri": "file:///x/b3"})
			logB.until(t, "app-b's update after app-a left", updated("file:///x/b3"))
		})
	}
}
