package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// BenchmarkSubscribe: n apps subscribe to the same server one after
// another, each waiting for its acknowledgement; ns/op is per subscribe.
func BenchmarkSubscribe(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := New(Options{Source: instantSource{names: []string{"s"}, child: instantChild{done: make(chan struct{})}}})
			defer m.Close()
			w := Watch{Servers: []string{"s"}, ToolsListChanged: true, URIs: []string{"r://a"}}
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
