package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingChild is a legacy child that refuses resources/subscribe of URIs
// containing refuse, counts the requests for each URI, and, while stalled,
// answers nothing (until the request's deadline).
type countingChild struct {
	instantChild
	refuse  string
	stalled atomic.Bool
	unstall chan struct{} // closed when it answers again

	mu         sync.Mutex
	subscribed map[string]bool
	calls      map[string]int // method + " " + uri
}

func newCountingChild(refuse string) *countingChild {
	return &countingChild{instantChild: instantChild{done: make(chan struct{})}, refuse: refuse,
		subscribed: map[string]bool{}, calls: map[string]int{}, unstall: make(chan struct{})}
}

func (c *countingChild) Call(ctx context.Context, method string, params json.RawMessage) error {
	var p struct{ URI string }
	_ = json.Unmarshal(params, &p)
	c.mu.Lock()
	c.calls[method+" "+p.URI]++
	c.mu.Unlock()
	if c.stalled.Load() { // answers once it recovers, if the caller still waits
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.unstall:
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if method == "resources/subscribe" && c.refuse != "" && strings.Contains(p.URI, c.refuse) {
		return errors.New("no such resource")
	}
	if method == "resources/subscribe" {
		c.subscribed[p.URI] = true
	} else {
		delete(c.subscribed, p.URI)
	}
	return nil
}

func (c *countingChild) count(method, uri string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method+" "+uri]
}

func (c *countingChild) held() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.subscribed))
}

// eventually polls cond (a condition, not a timed wait) for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A legacy batch that stalls (the child answers nothing in time) leaves
// unsubscribes unsent; once the live child answers again they are sent,
// without any app doing anything more.
func TestStalledLegacyBatchUnsubscribesWhenChildAnswersAgain(t *testing.T) {
	child := newCountingChild("")
	m := New(Options{Source: oneChildSource{child}, CallTimeout: 50 * time.Millisecond})
	defer m.Close()
	var uris []string
	for i := range 3 * upstreamInFlight {
		uris = append(uris, fmt.Sprintf("r://%03d", i))
	}
	st, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: uris})
	if err != nil || len(acks) != 1 || len(acks[0].URIs) != len(uris) {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer st.Close()
	child.stalled.Store(true) // slow, not gone
	if _, err := m.Update(context.Background(), st.ID(), nil, uris[1:]); err != nil {
		t.Fatal(err)
	}
	if held := child.held(); len(held) == 1 {
		t.Fatalf("a stalled child unsubscribed everything: %q", held)
	}
	child.stalled.Store(false) // it answers again
	close(child.unstall)
	eventually(t, "the unsent unsubscribes", func() bool { return slices.Equal(child.held(), uris[:1]) })
}

// A resources/subscribe the child refused is not sent again at every later
// reconcile: only once something changed (the URI set of the server, a
// restart, a resources list_changed).
func TestRefusedSubscribeNotRetriedUntilSomethingChanges(t *testing.T) {
	child := newCountingChild("bad")
	m := New(Options{Source: oneChildSource{child}})
	defer m.Close()
	w := Watch{Servers: []string{"s"}, URIs: []string{"r://bad", "r://good"}}
	a, acks, err := m.Subscribe(context.Background(), AppInfo{}, w)
	if err != nil || len(acks) != 1 || !slices.Equal(acks[0].URIs, []string{"r://good"}) {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer a.Close()
	// Other apps come and go wanting the same URIs and more kinds: each
	// costs a reconcile, none a second subscribe of the refused URI.
	for range 3 {
		b, _, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, ToolsListChanged: true, URIs: w.URIs})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	if n := child.count("resources/subscribe", "r://bad"); n != 1 {
		t.Fatalf("the refused URI was sent %d times, want once", n)
	}
	// A resources list_changed: the URI may exist now.
	m.OnNotification("s", "notifications/resources/list_changed", nil)
	eventually(t, "a retry after list_changed", func() bool { return child.count("resources/subscribe", "r://bad") == 2 })
	// The server's URI set changes: tried once more.
	if _, err := m.Update(context.Background(), a.ID(), []string{"r://other"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := child.count("resources/subscribe", "r://bad"); n != 3 {
		t.Fatalf("after the URI set changed the refused URI was sent %d times in all, want 3", n)
	}
}
