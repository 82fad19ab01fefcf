package session

import (
	"context"
	"errors"
	"testing"
	"time"
)

// pastDeadline is a cancelled context whose deadline has passed: what a
// gRPC handler sees when the app's own deadline timer cancelled the call
// before the daemon's timer fired.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestCancelReason(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	withCause, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(errors.New("the app went away"))
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"cancelled", cancelled, "the client cancelled the request or went away"},
		{"cancelled with a cause", withCause, "the app went away"},
		{"deadline", expired, "context deadline exceeded"},
		{"cancelled after its deadline passed", pastDeadline{cancelled}, "context deadline exceeded"},
	} {
		if got := cancelReason(tc.ctx); got != tc.want {
			t.Errorf("%s: reason %q, want %q", tc.name, got, tc.want)
		}
	}
}
