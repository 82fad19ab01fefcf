package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// staleListRounds is how many call→list rounds each case runs: the stale
// list showed up about once in thirty.
const staleListRounds = 200

// A tools/list right after a tools/call that changed the list and wrote
// list_changed before its answer never returns the old list: neither from
// the cache nor from a fetch that was in flight when the change was
// announced. Another app keeps listing meanwhile, so that fetches are in
// flight (and coalesced) around every change.
func TestCacheNoStaleListAfterAnnouncedChange(t *testing.T) {
	for _, mode := range []string{"legacy", "modern"} {
		for _, method := range []string{"tools/list", "tools/list page"} {
			t.Run(mode+" "+method, func(t *testing.T) {
				h := newHarness(t, Options{Specs: []Spec{fakeSpec("f", mode)}}, nil)
				if mode == "modern" {
					// The modern fake announces changes on listens only:
					// wait for mcpd's own listen (ownlisten.go).
					waitFor(t, "mcpd's own listen", func() bool {
						return h.addTool("f", "warm") != "notified 0 listens"
					})
				}
				list := func() string {
					if method == "tools/list" {
						items, _ := h.list("f", "tools/list")
						return items
					}
					resp, _, err := h.s.CallCached(context.Background(), "f", &session.Request{Method: "tools/list"}, CallOptions{})
					if err != nil || resp.Error != nil {
						t.Fatalf("tools/list: %v %v", err, resp)
					}
					return string(resp.Result)
				}
				ctx, stop := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { h.keepListing(ctx) })
				defer wg.Wait()
				defer stop()
				for i := range staleListRounds {
					name := fmt.Sprintf("added%d", i)
					h.addTool("f", name)
					if got := list(); !strings.Contains(got, `"name":"`+name+`"`) {
						t.Fatalf("round %d: tools/list after the announced change lacks %q", i, name)
					}
				}
			})
		}
	}
}

// addTool calls the fake's addtool and returns its answer.
func (h *harness) addTool(server, name string) string {
	h.t.Helper()
	resp, err := h.s.Call(context.Background(), server, toolCall("addtool", map[string]any{"name": name}), CallOptions{})
	if err != nil {
		h.t.Fatalf("addtool %q: %v", name, err)
	}
	return text(h.t, resp)
}

// keepListing asks for tools/list, both forms, until ctx ends.
func (h *harness) keepListing(ctx context.Context) {
	for ctx.Err() == nil {
		_, _, _ = h.s.ListCached(ctx, "f", "tools/list", nil, CallOptions{})
		_, _, _ = h.s.CallCached(ctx, "f", &session.Request{Method: "tools/list"}, CallOptions{})
	}
}

// A change the child announces on a listen mcpd has already forgotten (a
// cancelled listen the server did not close within the grace period, a
// listen whose acknowledgement came too late) reaches no app, but it still
// invalidates: the next list is not the old one.
func TestCacheInvalidatedByNotificationOnForgottenListen(t *testing.T) {
	// No own listen: the forgotten listen is the child's only one, and the
	// list stays cached by its ttlMs meanwhile.
	h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{fakeSpec("f", "modern")}}, nil)
	ctx := context.Background()
	c, err := subsSource{h.s}.Acquire(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Listen(ctx, json.RawMessage(`{"toolsListChanged":true}`), func(method string, _ json.RawMessage) {
		if method != "notifications/subscriptions/acknowledged" {
			t.Errorf("a forgotten listen delivered %s", method)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Forget() // not cancelled: the child still sends on it
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceHit)
	if got := h.addTool("f", "late"); got != "notified 1 listens" {
		t.Fatalf("addtool: %q", got)
	}
	if got := h.wantList("f", "tools/list", cache.SourceFetched); !strings.Contains(got, `"name":"late"`) {
		t.Fatalf("tools/list after the change lacks the new tool: %s", got)
	}
}
