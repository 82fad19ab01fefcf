package subscriptions

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkSubscribeOpenStreams: with n streams open on a server, one app
// subscribes to a URI nobody watches (a change upstream, not covered by
// what is subscribed) and leaves again. ns/op should not grow with n.
func BenchmarkSubscribeOpenStreams(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m, w := benchManager(b)
			for range n {
				st, _, err := m.Subscribe(context.Background(), AppInfo{}, w)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
			}
			nw := Watch{Servers: []string{"s"}, URIs: []string{"r://new"}}
			b.ReportAllocs()
			for b.Loop() {
				st, acks, err := m.Subscribe(context.Background(), AppInfo{}, nw)
				if err != nil || len(acks) != 1 || len(acks[0].URIs) != 1 {
					b.Fatalf("subscribe: %v %+v", err, acks)
				}
				st.Close()
			}
		})
	}
}

// Subscribing to something new and leaving again costs the same whatever
// the number of open streams: measured in allocations (deterministic),
// with 10 and with 1000 other streams open.
func TestSubscribeCostIndependentOfOpenStreams(t *testing.T) {
	cost := func(n int) float64 {
		m, w := instantManager(t), Watch{Servers: []string{"s"}, ToolsListChanged: true, URIs: []string{"r://a"}}
		for range n {
			st, _, err := m.Subscribe(context.Background(), AppInfo{}, w)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
		}
		nw := Watch{Servers: []string{"s"}, URIs: []string{"r://new"}}
		return testing.AllocsPerRun(50, func() {
			st, acks, err := m.Subscribe(context.Background(), AppInfo{}, nw)
			if err != nil || len(acks) != 1 || len(acks[0].URIs) != 1 {
				t.Fatalf("subscribe: %v %+v", err, acks)
			}
			st.Close()
		})
	}
	few, many := cost(10), cost(1000)
	if many > few*1.5+10 {
		t.Errorf("subscribe and leave with 1000 open streams: %.0f allocations, with 10: %.0f; want about the same", many, few)
	}
}
