package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// instantChild is a legacy child that takes every resources/subscribe at
// once.
type instantChild struct{ done chan struct{} }

func (instantChild) Pid() int     { return 1 }
func (instantChild) Modern() bool { return false }
func (instantChild) Capabilities() json.RawMessage {
	return json.RawMessage(`{"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true}}`)
}
func (instantChild) Call(context.Context, string, json.RawMessage) error { return nil }
func (instantChild) Listen(context.Context, json.RawMessage, func(string, json.RawMessage)) (Listener, error) {
	return nil, errors.New("legacy")
}
func (c instantChild) Done() <-chan struct{} { return c.done }

// instantSource runs one instantChild per server.
type instantSource struct {
	names []string
	child instantChild
}

func (s instantSource) Acquire(context.Context, string) (Child, error) { return s.child, nil }
func (s instantSource) Names() []string                                { return s.names }

// benchManager is a manager of one server whose child takes every
// subscription at once, closed at the benchmark's end, and what its apps
// watch there.
func benchManager(b *testing.B) (*Manager, Watch) {
	return instantManager(b), Watch{Servers: []string{"s"}, ToolsListChanged: true, URIs: []string{"r://a"}}
}

// instantManager is a manager of one server "s" whose child takes every
// subscription at once, closed when tb ends.
func instantManager(tb testing.TB) *Manager {
	m := New(Options{Source: instantSource{names: []string{"s"}, child: instantChild{done: make(chan struct{})}}})
	tb.Cleanup(m.Close)
	return m
}

// BenchmarkSubscribe: n apps subscribe to the same server one after
// another, each waiting for its acknowledgement; ns/op is per subscribe.
func BenchmarkSubscribe(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m, w := benchManager(b)
			streams := make([]*Stream, 0, n)
			b.ResetTimer()
			for range b.N {
				for range n {
					st, acks, err := m.Subscribe(context.Background(), AppInfo{}, w)
					if err != nil || len(acks) != 1 || acks[0].Error != "" || len(acks[0].URIs) != 1 {
						b.Fatalf("subscribe: %v %+v", err, acks)
					}
					streams = append(streams, st)
				}
				b.StopTimer()
				for _, st := range streams {
					st.Close()
				}
				streams = streams[:0]
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/subscribe")
		})
	}
}

// dyingSource gives out one child; once it has exited, the server cannot
// run (a crash loop).
type dyingSource struct{ child instantChild }

func (s dyingSource) Acquire(context.Context, string) (Child, error) {
	select {
	case <-s.child.done:
		return nil, errors.New("server is in a crash loop")
	default:
		return s.child, nil
	}
}
func (dyingSource) Names() []string { return []string{"s"} }

// A stream that subscribes after the child that acknowledged the others
// exited is not answered from that child's acknowledgement: it waits for
// the upstream, and learns the server cannot run.
func TestSubscribeAfterChildLostWaits(t *testing.T) {
	src := dyingSource{child: instantChild{done: make(chan struct{})}}
	m := New(Options{Source: src})
	defer m.Close()
	w := Watch{Servers: []string{"s"}, ToolsListChanged: true, URIs: []string{"r://a"}}
	if _, acks, err := m.Subscribe(context.Background(), AppInfo{}, w); err != nil || acks[0].Error != "" {
		t.Fatalf("first subscribe: %v %+v", err, acks)
	}
	close(src.child.done)
	u := m.existing(Target{Server: "s"})
	for { // the upstream's loop notices the exit (polling, not a timed wait)
		u.mu.Lock()
		live := u.live
		u.mu.Unlock()
		if !live {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, acks, err := m.Subscribe(context.Background(), AppInfo{}, w)
	if err != nil || len(acks) != 1 || acks[0].Error == "" {
		t.Fatalf("subscribe after the child exited: %v %+v, want the server's error", err, acks)
	}
}

// BenchmarkJoinAndLeave: one more app subscribes and leaves while n others
// watch the same things on the same server; ns/op is one Subscribe and
// one Close, and the upstream work they cause (none needed).
func BenchmarkJoinAndLeave(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m, w := benchManager(b)
			for range n {
				if _, _, err := m.Subscribe(context.Background(), AppInfo{}, w); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				st, _, err := m.Subscribe(context.Background(), AppInfo{}, w)
				if err != nil {
					b.Fatal(err)
				}
				st.Close()
			}
		})
	}
}

// recordingChild is an instantChild that records its resources/subscribe
// and resources/unsubscribe calls.
type recordingChild struct {
	instantChild
	mu    sync.Mutex
	calls []string
}

func (c *recordingChild) Call(_ context.Context, method string, params json.RawMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, method+" "+string(params))
	return nil
}

func (c *recordingChild) called() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// oneChildSource runs child as the one child of server "s".
type oneChildSource struct{ child Child }

func (s oneChildSource) Acquire(context.Context, string) (Child, error) { return s.child, nil }
func (oneChildSource) Names() []string                                  { return []string{"s"} }

// A stream that joins wanting only what is held, or leaves while others
// still want all it wanted, changes nothing upstream; one that was the
// last to want a URI unsubscribes it.
func TestLeavingReleasesOnlyWhatNoOtherWants(t *testing.T) {
	child := &recordingChild{instantChild: instantChild{done: make(chan struct{})}}
	m := New(Options{Source: oneChildSource{child}})
	defer m.Close()
	open := func(uris ...string) *Stream {
		t.Helper()
		st, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: uris})
		if err != nil || acks[0].Error != "" {
			t.Fatalf("subscribe %v: %v %+v", uris, err, acks)
		}
		return st
	}
	a, b := open("r://a"), open("r://a", "r://b")
	u := m.existing(Target{Server: "s"})
	version := func() uint64 {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.version
	}
	v := version()
	c := open("r://a") // held already: answered without a reconcile
	defer c.Close()
	before := len(child.called())
	a.Close() // c still wants r://a: no reconcile either
	if got := version(); got != v {
		t.Errorf("the upstream's interest changed %d times for a stream of what was held and a leave another covers, want 0", got-v)
	}
	// b's leave shrinks the union: r://b is unsubscribed. Its ack, once a
	// new stream waits for the upstream, says the reconcile ran.
	b.Close()
	if _, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: []string{"r://c"}}); err != nil || acks[0].Error != "" {
		t.Fatalf("subscribe r://c: %v %+v", err, acks)
	}
	var unsubscribed []string
	for _, c := range child.called()[before:] {
		if strings.HasPrefix(c, "resources/unsubscribe") {
			unsubscribed = append(unsubscribed, c)
		}
	}
	if len(unsubscribed) != 1 || !strings.Contains(unsubscribed[0], "r://b") {
		t.Fatalf("unsubscribed %v, want r://b alone", unsubscribed)
	}
}

// What a stream added by an update is released when it leaves, though
// another stream still wants what it first asked for.
func TestLeavingReleasesWhatAnUpdateAdded(t *testing.T) {
	child := &recordingChild{instantChild: instantChild{done: make(chan struct{})}}
	m := New(Options{Source: oneChildSource{child}})
	defer m.Close()
	w := Watch{Servers: []string{"s"}, URIs: []string{"r://a"}}
	keep, _, err := m.Subscribe(context.Background(), AppInfo{}, w)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	leaver, _, err := m.Subscribe(context.Background(), AppInfo{}, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(context.Background(), leaver.ID(), []string{"r://b"}, nil); err != nil {
		t.Fatal(err)
	}
	leaver.Close()
	// A subscriber that waits for the upstream sees the leave applied.
	if _, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: []string{"r://c"}}); err != nil || acks[0].Error != "" {
		t.Fatalf("subscribe r://c: %v %+v", err, acks)
	}
	if calls := child.called(); !slices.ContainsFunc(calls, func(c string) bool {
		return strings.HasPrefix(c, "resources/unsubscribe") && strings.Contains(c, "r://b")
	}) {
		t.Fatalf("calls %v: r://b, which only the leaver wanted, was not unsubscribed", calls)
	}
}

// BenchmarkUpdate: 100 apps, each subscribed to the same server, add
// total/100 resource URIs each (one Update per app), then remove them
// again; ns/URI is per URI added and removed, the in-process part of the
// scale section's subscriptions curve.
func BenchmarkUpdate(b *testing.B) {
	const apps = 100
	for _, total := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(total), func(b *testing.B) {
			m, w := benchManager(b)
			streams := make([]*Stream, apps)
			uris := make([][]string, apps)
			for i := range streams {
				st, _, err := m.Subscribe(context.Background(), AppInfo{}, w)
				if err != nil {
					b.Fatal(err)
				}
				streams[i] = st
				for k := range total / apps {
					uris[i] = append(uris[i], fmt.Sprintf("r://bench/%d/%d", i, k))
				}
			}
			update := func(add bool) {
				for i, st := range streams {
					var a, r []string
					if add {
						a = uris[i]
					} else {
						r = uris[i]
					}
					acks, err := m.Update(context.Background(), st.ID(), a, r)
					if err != nil || acks[0].Error != "" {
						b.Fatalf("update: %v %+v", err, acks)
					}
				}
			}
			for b.Loop() {
				update(true)
				update(false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/URI")
		})
	}
}
