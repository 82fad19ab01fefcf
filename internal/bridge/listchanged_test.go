package bridge

import (
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// A change is dated by its event's time, rounded up to the millisecond,
// when mcpd runs in the bridge's process; else, and for a time not yet
// come or missing, by now.
func TestEventTime(t *testing.T) {
	heard := time.Now().Add(-5 * time.Second)
	ev := &service.SubscriptionEvent{Time: time.UnixMilli(heard.UnixMilli())}
	local := &bridge{opts: Options{LocalClock: true}}
	if got, want := local.eventTime(ev), time.UnixMilli(heard.UnixMilli()+1); !got.Equal(want) {
		t.Errorf("in mcpd: %v, want %v", got, want)
	}
	if got := local.eventTime(ev); got.Before(heard) {
		t.Errorf("in mcpd: %v is before the event (%v)", got, heard)
	}
	before := time.Now()
	for _, c := range []struct {
		name string
		b    *bridge
		ev   *service.SubscriptionEvent
	}{
		{"remote mcpd", &bridge{}, ev},
		{"no time", local, &service.SubscriptionEvent{}},
		{"a time to come", local, &service.SubscriptionEvent{Time: time.Now().Add(time.Hour)}},
	} {
		if got := c.b.eventTime(c.ev); got.Before(before) || got.After(time.Now()) {
			t.Errorf("%s: %v, want the time it came", c.name, got)
		}
	}
}
