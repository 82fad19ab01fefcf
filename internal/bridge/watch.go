package bridge

import (
	"context"
	"io"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// watchStream is a subscription (Backend.Watch) read as a stream: Watch
// runs on a goroutine of the bridge's (b.wg) until ctx ends, handing each event to
// Recv through an unbuffered channel, so that an event sent before Watch
// returned is always received before its end, and a subscription opened
// while another still delivers (reopenFor) waits to be read.
type watchStream struct {
	events chan service.SubscriptionEvent
	done   chan struct{} // closed when Watch returned
	err    error         // Watch's return; read after done
}

// watch opens a subscription to what w watches, until ctx ends.
func (b *bridge) watch(ctx context.Context, w service.Watch) *watchStream {
	s := &watchStream{events: make(chan service.SubscriptionEvent), done: make(chan struct{})}
	b.wg.Go(func() {
		defer close(s.done)
		s.err = b.be.Watch(ctx, w, func(ev service.SubscriptionEvent) error {
			select {
			case s.events <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})
	return s
}

// Recv returns the subscription's next event, or its end: Watch's error,
// else io.EOF.
func (s *watchStream) Recv() (service.SubscriptionEvent, error) {
	select {
	case ev := <-s.events:
		return ev, nil
	case <-s.done:
		if s.err != nil {
			return service.SubscriptionEvent{}, s.err
		}
		return service.SubscriptionEvent{}, io.EOF
	}
}
