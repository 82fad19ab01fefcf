package subscriptions

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkPublish is the manager's part of one fan-out: a child's
// resources/updated published to n streams watching its URI, and each
// stream's queue taken, as each app's Subscribe handler does. ns/delivery
// should not grow with n.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := New(Options{Source: downSource{[]string{"a"}}, AckTimeout: time.Millisecond})
			defer m.Close()
			streams := make([]*Stream, n)
			for i := range streams {
				st, _, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"a"}, URIs: []string{"demo://counter"}})
				if err != nil {
					b.Fatal(err)
				}
				streams[i] = st
			}
			params := []byte(`{"uri":"demo://counter"}`)
			var buf []*Event
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				m.OnNotification("a", "notifications/resources/updated", params)
				for _, st := range streams {
					if buf, _ = st.Take(buf[:0]); len(buf) != 1 {
						b.Fatalf("%d events taken, want 1", len(buf))
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delivery")
		})
	}
}
