package bridge

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// slowUpdateBackend is memBackend whose UpdateSubscription waits until
// release is closed (a server slow to take the subscription), and whose
// Subscribe streams end when the test sends on end.
type slowUpdateBackend struct {
	memBackend
	updating chan struct{} // gets one value per UpdateSubscription begun
	release  chan struct{}
	end      chan struct{}
}

func (s *slowUpdateBackend) UpdateWatch(ctx context.Context, _ service.SubscriptionUpdate) ([]service.ServerAck, error) {
	s.updating <- struct{}{}
	select {
	case <-s.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *slowUpdateBackend) Watch(ctx context.Context, _ service.Watch, send func(service.SubscriptionEvent) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with the subscription's context
		select {
		case <-s.end:
			cancel()
		case <-sctx.Done():
		}
	}()
	return deliverEvents(sctx, s.events, send)
}

// A resources/subscribe whose UpdateSubscription is slow holds up no event:
// the Subscribe stream that reopens meanwhile is read at once, and the
// bridge tells the host that the lists may have changed.
func TestSlowURISyncHoldsUpNoEvent(t *testing.T) {
	be := &slowUpdateBackend{
		memBackend: memBackend{events: make(chan *service.SubscriptionEvent)},
		updating:   make(chan struct{}, 4), release: make(chan struct{}), end: make(chan struct{}),
	}
	sink := &recordSink{got: make(chan scopedMsg, 64)}
	send, stop := serveHost(t, be, sink)
	release := sync.OnceFunc(func() { close(be.release) })
	defer func() { // also after a failure: the bridge ends once the update has
		release()
		_ = stop()
	}()
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	if m := sink.next(t); m.msg.Result == nil {
		t.Fatalf("initialize answered %s", m.msg.Error)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///x"}}`)
	waitFor(t, be.updating, "the UpdateSubscription of resources/subscribe")

	be.end <- struct{}{} // mcpd "restarts": the stream ends and is opened again
	if m := sink.next(t); m.msg.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s %s while the update was slow, want the list change of the reopened stream", m.msg.Method, m.msg.Result)
	}
	release()
	for m := sink.next(t); m.scope != "2"; m = sink.next(t) {
	}
}
