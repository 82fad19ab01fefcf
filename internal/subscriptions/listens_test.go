package subscriptions

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

// sessionChild is a modern child that keeps one registration per session,
// as the Go SDK v1.8.0 server does: the newest listen's filter is what it
// delivers on, and closing any listen drops that registration.
type sessionChild struct {
	instantChild

	mu      sync.Mutex
	listens int
	reg     *sessionListen // nil: nothing registered
}

type sessionListen struct {
	c            *sessionChild
	filter       listenFilter
	ack          json.RawMessage
	onNotify     func(string, json.RawMessage)
	done, closed chan struct{}
	cancel       sync.Once
}

func (*sessionChild) Modern() bool { return true }
func (*sessionChild) Capabilities() json.RawMessage {
	return json.RawMessage(`{"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true}}`)
}

func (c *sessionChild) Listen(_ context.Context, filter json.RawMessage, onNotify func(string, json.RawMessage)) (Listener, error) {
	l := &sessionListen{c: c, ack: filter, onNotify: onNotify, done: make(chan struct{}), closed: make(chan struct{})}
	_ = json.Unmarshal(filter, &l.filter)
	c.mu.Lock()
	c.listens++
	c.reg = l
	c.mu.Unlock()
	onNotify("notifications/subscriptions/acknowledged", json.RawMessage(`{"notifications":`+string(filter)+`}`))
	return l, nil
}

func (l *sessionListen) Ack() json.RawMessage    { return l.ack }
func (l *sessionListen) Done() <-chan struct{}   { return l.done }
func (l *sessionListen) Closed() <-chan struct{} { return l.closed }
func (l *sessionListen) Forget()                 {}
func (l *sessionListen) Cancel(string) {
	l.cancel.Do(func() {
		close(l.done)
		l.c.mu.Lock()
		l.c.reg = nil // the session's registration goes with any listen
		l.c.mu.Unlock()
		close(l.closed)
	})
}

// touch sends resources/updated of uri on the registered listen, if its
// filter holds uri; it reports whether it did.
func (c *sessionChild) touch(uri string) bool {
	c.mu.Lock()
	l := c.reg
	c.mu.Unlock()
	if l == nil {
		return false
	}
	for _, u := range l.filter.ResourceSubscriptions {
		if u == uri {
			l.onNotify("notifications/resources/updated", json.RawMessage(`{"uri":"`+uri+`"}`))
			return true
		}
	}
	return false
}

func (c *sessionChild) listenCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listens
}

// A change of what the apps want from a modern server costs one listen,
// not three exchanges (open, cancel and wait, open again), and updates
// keep arriving after each change on a server that keeps one registration
// per session.
func TestModernSubscriptionChangeCostsOneListen(t *testing.T) {
	child := &sessionChild{instantChild: instantChild{done: make(chan struct{})}}
	m := New(Options{Source: oneChildSource{child}})
	defer m.Close()
	st, acks, err := m.Subscribe(context.Background(), AppInfo{}, Watch{Servers: []string{"s"}, URIs: []string{"r://a"}})
	if err != nil || len(acks) != 1 || acks[0].Era != "modern" || len(acks[0].URIs) != 1 {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer st.Close()
	if n := child.listenCount(); n != 1 {
		t.Fatalf("%d listens for the first subscription, want 1", n)
	}
	var buf []*Event
	for i := range 6 {
		add, remove := []string{"r://b"}, []string(nil)
		if i%2 == 1 {
			add, remove = nil, add
		}
		before := child.listenCount()
		acks, err := m.Update(context.Background(), st.ID(), add, remove)
		if err != nil || acks[0].Error != "" {
			t.Fatalf("update %d: %v %+v", i, err, acks)
		}
		if n := child.listenCount() - before; n != 1 {
			t.Errorf("change %d cost %d listens, want 1", i, n)
		}
		if !child.touch("r://a") {
			t.Fatalf("after change %d the server has no registration holding r://a", i)
		}
		buf, _ = st.Take(buf[:0])
		got := 0
		for _, ev := range buf {
			if ev.Kind == KindResourceUpdated && ev.URI == "r://a" {
				got++
			}
		}
		if got != 1 {
			t.Fatalf("after change %d: %d updates of r://a delivered, want 1", i, got)
		}
	}
}
