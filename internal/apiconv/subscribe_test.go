package apiconv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// TestSubscriptionEventRoundTrip: every kind and field survives mcpd.v1
// both ways, so that the two tables cannot drift.
func TestSubscriptionEventRoundTrip(t *testing.T) {
	for k := service.Ack; k <= service.Failed; k++ {
		if _, ok := protoKinds[k]; !ok {
			t.Fatalf("kind %d has no mcpd.v1 name", k)
		}
		ev := service.SubscriptionEvent{Kind: k, Server: "s", URI: "u", Params: json.RawMessage(`{"a":1}`),
			State: "ready", Pid: 7, Exit: "x", Error: "e", Synthetic: true, DuringCalls: true,
			Time: time.UnixMilli(1234), DroppedLogMessages: 3}
		if k == service.Ack {
			ev.Ack = &service.SubscriptionAck{ID: 9, Servers: []service.ServerAck{{Server: "s", Era: "modern", Logs: true, URIs: []string{"u"}}}}
		}
		if d := cmp.Diff(ev, SubscriptionEventOf(SubscriptionEventToProto(ev))); d != "" {
			t.Errorf("kind %d: (-want +got)\n%s", k, d)
		}
	}
}

// TestWatchRoundTrip: a watch survives the Subscribe request both ways.
func TestWatchRoundTrip(t *testing.T) {
	w := service.Watch{Servers: []string{"a"}, ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true,
		URIs: []string{"u"}, State: true, Logs: true, TaskStatus: true, Client: service.Client{Name: "n", Version: "1"}}
	if d := cmp.Diff(w, WatchOf(WatchToProto(w))); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}
