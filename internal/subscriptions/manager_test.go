package subscriptions

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// downSource is a Source whose servers never run.
type downSource struct{ names []string }

func (s downSource) Acquire(context.Context, string) (Child, error) {
	return nil, errors.New("server is down")
}

func (s downSource) Names() []string { return s.names }

// A stream closing while a reload removes one of its servers: both touch
// the stream's server set, which must stay consistent (run with -race).
func TestCloseDuringServerRemoved(t *testing.T) {
	m := New(Options{Source: downSource{[]string{"a", "b"}}})
	defer m.Close()
	for range 50 {
		st, _, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"a", "b"}, ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			m.ServerRemoved("a", "")
		})
		wg.Go(func() {
			<-start
			st.Close()
		})
		close(start)
		wg.Wait()
		if n := len(m.Streams()); n != 0 {
			t.Fatalf("%d streams open after Close", n)
		}
	}
}
