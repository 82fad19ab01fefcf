package subscriptions

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
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

// A queue overflows on the publisher's goroutine (a child's reader): the
// lag releases the stream's interest there and then, without blocking,
// while other goroutines open, update and close streams, reload servers
// and read status (run with -race; a lock-order inversion hangs it).
func TestLagOnPublisherDuringChurn(t *testing.T) {
	m := New(Options{Source: downSource{[]string{"a", "b"}}, QueueEvents: 2})
	stuck := false
	t.Cleanup(func() {
		if !stuck { // Close would wait for the stuck goroutines
			m.Close()
		}
	})
	ctx := context.Background()
	lagging, _, err := m.Subscribe(ctx, AppInfo{Name: "stalled"}, Watch{Servers: []string{"a"}, URIs: []string{"r://"}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasDemand("a") {
		t.Fatal("no demand on a with a stream watching it")
	}
	for i := range 3 { // three URIs in a queue of two: no coalescing helps
		m.OnNotification("a", "notifications/resources/updated", []byte(fmt.Sprintf(`{"uri":"r://%d"}`, i)))
	}
	if st := lagging.Stats(); !st.Lagged {
		t.Fatalf("stats = %+v, want lagged", st)
	}
	if m.HasDemand("a") {
		t.Fatal("a lagged stream still counts as demand")
	}
	if n := len(m.Streams()); n != 1 {
		t.Fatalf("%d streams listed, want the lagged one", n)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() { // a child's reader
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				server := []string{"a", "b"}[(p+i)%2]
				m.OnNotification(server, "notifications/resources/updated", []byte(fmt.Sprintf(`{"uri":"r://%d"}`, i%7)))
				m.OnNotification(server, "notifications/tools/list_changed", nil)
				if i%50 == 0 {
					m.OnState(StateEvent{Server: server, State: "ready"})
				}
			}
		})
	}
	churn := func(w Watch) {
		for range 1000 {
			st, _, err := m.Subscribe(ctx, AppInfo{}, w)
			if err != nil {
				t.Error(err)
				return
			}
			if w.Servers != nil {
				if _, err := m.Update(ctx, st.ID(), []string{"r://x"}, []string{"r://"}); err != nil && !errors.Is(err, ErrUnknownStream) {
					t.Error(err)
				}
			}
			st.Take(nil)
			st.Close()
		}
	}
	var users sync.WaitGroup
	users.Go(func() { churn(Watch{Servers: []string{"a", "b"}, URIs: []string{"r://"}, ToolsListChanged: true}) })
	users.Go(func() { churn(Watch{ToolsListChanged: true, State: true}) })
	users.Go(func() {
		for range 200 {
			m.ServerRemoved("b", "")
			m.ServerAdded("b")
			m.ServerChanged("a")
		}
	})
	users.Go(func() {
		for range 2000 {
			m.Streams()
			m.Totals()
			m.HasDemand("a")
		}
	})
	finished := make(chan struct{})
	go func() {
		users.Wait()
		close(stop)
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		stuck = true
		buf := make([]byte, 1<<20)
		t.Fatalf("stuck:\n%s", buf[:runtime.Stack(buf, true)])
	}
	if tot := m.Totals(); tot.Lagged < 2 {
		t.Fatalf("totals = %+v, want streams lagging during the churn", tot)
	}
	lagging.Close()
	if n := len(m.Streams()); n != 0 {
		t.Fatalf("%d streams listed after every stream closed", n)
	}
}
