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

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// pickyChild is a legacy child that refuses resources/subscribe of the
// URIs in refuse, and records how many requests it had at once.
type pickyChild struct {
	instantChild
	refuse string

	mu               sync.Mutex
	inFlight, most   int
	subscribed       map[string]bool
	release          chan struct{} // closed: answer; nil answers at once
	waitingForAnswer chan struct{} // told of a request's arrival while it has room
}

func (c *pickyChild) Call(_ context.Context, method string, params json.RawMessage) error {
	var p struct{ URI string }
	_ = json.Unmarshal(params, &p)
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	if c.release != nil {
		select {
		case c.waitingForAnswer <- struct{}{}:
		default: // the test has seen enough
		}
		<-c.release
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	if method == "resources/subscribe" && strings.Contains(p.URI, c.refuse) {
		return errors.New("no such resource")
	}
	if method == "resources/subscribe" {
		c.subscribed[p.URI] = true
	} else {
		delete(c.subscribed, p.URI)
	}
	return nil
}

// Many URIs added at once go to a legacy child as concurrent requests,
// never more than upstreamInFlight; the one it refuses is left out of the
// acknowledgement while the others are taken, and removing URIs
// unsubscribes exactly them.
func TestLegacyURIsGoUpstreamTogether(t *testing.T) {
	child := &pickyChild{instantChild: instantChild{done: make(chan struct{})}, refuse: "bad",
		subscribed: map[string]bool{}, release: make(chan struct{}), waitingForAnswer: make(chan struct{}, upstreamInFlight)}
	m := New(Options{Source: oneChildSource{child}})
	defer m.Close()
	answer := sync.OnceFunc(func() { close(child.release) })
	defer answer() // before Close, which waits for the loop
	child.subscribed = map[string]bool{}
	var uris []string
	for i := range 3 * upstreamInFlight {
		uris = append(uris, fmt.Sprintf("r://%02d", i))
	}
	uris = append(uris, "r://bad")
	type result struct {
		acks []ServerAck
		err  error
	}
	done := make(chan result, 1)
	go func() { // owned: its result is read below
		_, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: uris})
		done <- result{acks, err}
	}()
	// The child holds every request until upstreamInFlight are waiting:
	// they were sent together, not one after another's answer.
	for i := range upstreamInFlight {
		select {
		case <-child.waitingForAnswer:
		case <-time.After(10 * time.Second): // not a timing: a deadlock guard
			t.Fatalf("%d requests reached the child at once, want %d", i, upstreamInFlight)
		}
	}
	answer()
	r := <-done
	defer func() {
		for _, st := range m.openStreams() {
			st.Close()
		}
	}()
	if r.err != nil || len(r.acks) != 1 || r.acks[0].Error != "" {
		t.Fatalf("subscribe: %v %+v", r.err, r.acks)
	}
	want := slices.DeleteFunc(slices.Clone(uris), func(u string) bool { return u == "r://bad" })
	if !slices.Equal(r.acks[0].URIs, want) {
		t.Errorf("acknowledged %q, want every URI but the refused one", r.acks[0].URIs)
	}
	child.mu.Lock()
	most := child.most
	child.mu.Unlock()
	if most != upstreamInFlight {
		t.Errorf("at most %d requests at once, want %d", most, upstreamInFlight)
	}
	st := m.openStreams()[0]
	acks, err := m.Update(context.Background(), st.ID(), nil, []string{"r://00", "r://05"})
	if err != nil || acks[0].Error != "" {
		t.Fatalf("update: %v %+v", err, acks)
	}
	want = slices.DeleteFunc(want, func(u string) bool { return u == "r://00" || u == "r://05" })
	child.mu.Lock()
	held := slices.Sorted(maps.Keys(child.subscribed))
	child.mu.Unlock()
	if !slices.Equal(acks[0].URIs, want) || !slices.Equal(held, want) {
		t.Errorf("after removing two: acknowledged %q, the child holds %q, want %q", acks[0].URIs, held, want)
	}
}

// silentChild is a legacy child that never answers a request; it counts
// the requests it got.
type silentChild struct {
	instantChild
	calls atomic.Int64
}

func (c *silentChild) Call(ctx context.Context, _ string, _ json.RawMessage) error {
	c.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// Once a request goes unanswered for CallTimeout, the rest of its batch
// is not sent: a child that answers nothing costs one timeout, not one
// per URI, and the app's acknowledgement holds none of them.
func TestSilentChildCostsOneTimeout(t *testing.T) {
	child := &silentChild{instantChild: instantChild{done: make(chan struct{})}}
	core, logs := observer.New(zap.DebugLevel)
	m := New(Options{Source: oneChildSource{child}, CallTimeout: 50 * time.Millisecond, Logger: zap.New(core)})
	defer m.Close()
	var uris []string
	for i := range 5 * upstreamInFlight {
		uris = append(uris, fmt.Sprintf("r://%03d", i))
	}
	st, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: uris})
	if err != nil || len(acks) != 1 {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer st.Close()
	if len(acks[0].URIs) != 0 {
		t.Errorf("acknowledged %q from a child that answered nothing", acks[0].URIs)
	}
	// The requests sent before the first timed out: every worker's first,
	// unless a worker started only after that; and the one that waits for
	// the child to answer again.
	n := child.calls.Load()
	if n < 1 || n > upstreamInFlight+1 {
		t.Errorf("the silent child got %d requests, want the first %d at most and one waiting for an answer", n, upstreamInFlight)
	}
	// Each failed request is logged up to a few, then counted: one line
	// for those not sent, not one per URI.
	if lines := logs.FilterMessageSnippet("resources/subscribe").Len(); lines > maxFailuresLogged+2 {
		t.Errorf("%d log lines for one batch of %d URIs, want at most %d", lines, len(uris), maxFailuresLogged+2)
	}
	if logs.FilterMessage("resources/subscribe not sent").Len() != 1 && n < int64(len(uris)) {
		t.Errorf("no line counts the requests not sent: %v", logs.All())
	}
}

// goneChild is a legacy child whose process is gone: every Call fails so.
type goneChild struct {
	instantChild
	calls atomic.Int64
}

func (c *goneChild) Call(context.Context, string, json.RawMessage) error {
	c.calls.Add(1)
	return fmt.Errorf("server %q: %w: closed", "s", ErrChildGone)
}

// A child found gone stops the batch: what was not sent yet is counted in
// one line that says the server exited, not tried and logged one by one.
func TestGoneChildStopsTheBatch(t *testing.T) {
	child := &goneChild{instantChild: instantChild{done: make(chan struct{})}}
	core, logs := observer.New(zap.DebugLevel)
	m := New(Options{Source: oneChildSource{child}, Logger: zap.New(core)})
	defer m.Close()
	var uris []string
	for i := range 5 * upstreamInFlight {
		uris = append(uris, fmt.Sprintf("r://%03d", i))
	}
	st, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: uris})
	if err != nil || len(acks) != 1 || len(acks[0].URIs) != 0 {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer st.Close()
	if n := child.calls.Load(); n > upstreamInFlight {
		t.Errorf("%d requests to a gone child, want at most one per worker (%d)", n, upstreamInFlight)
	}
	notSent := logs.FilterMessage("resources/subscribe not sent").All()
	if len(notSent) != 1 || !strings.Contains(fmt.Sprint(notSent[0].ContextMap()["error"]), "exited") {
		t.Errorf("want one line counting the requests not sent because the server exited, got %v", logs.All())
	}
}
