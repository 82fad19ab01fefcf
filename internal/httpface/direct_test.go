package httpface

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// callDirect sends tools/call name(args) on the caller's goroutine and
// returns the events passed to it.
func callDirect(ctx context.Context, be *Backend, name, args string) ([]*mcpdv1.CallToolEvent, error) {
	var evs []*mcpdv1.CallToolEvent
	err := be.SendRequestDirect(ctx, &mcpdv1.SendRequestRequest{Server: "fake", Method: "tools/call",
		ParamsJson: `{"_meta":{"progressToken":"t"},"name":"` + name + `","arguments":` + args + `}`},
		func(ev *mcpdv1.CallToolEvent) error {
			evs = append(evs, ev)
			return nil
		})
	return evs, err
}

// A direct call passes the progress in order, then the response, and
// ends with nil, as a stream's Recv ends with EOF.
func TestDirectProgressThenResponse(t *testing.T) {
	_, be := newDaemon(t)
	evs, err := callDirect(ctxT(t), be, "progress", `{"count":3}`)
	if err != nil {
		t.Fatalf("direct call: %v", err)
	}
	if len(evs) != 4 || resultText(t, evs) != "done" {
		t.Fatalf("events %v: want 3 progress then done", evs)
	}
	for i, ev := range evs[:3] {
		var p struct{ Progress float64 }
		if json.Unmarshal([]byte(ev.GetProgressJson()), &p) != nil || p.Progress != float64(i+1) {
			t.Fatalf("event %d = %v, want progress %d", i, ev, i+1)
		}
	}
}

// The caller's cancellation ends a direct call with CANCELED, as on a
// stream, and reaches the child.
func TestDirectCancel(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { // owned: its result is waited for below
		_, err := callDirect(cctx, be, "sleep", `{"ms":60000}`)
		done <- err
	}()
	statsCalls := 0
	waitFor(t, "the sleep call in flight", func() bool {
		statsCalls++
		evs, _ := callDirect(ctx, be, "stats", `{}`)
		var stats struct{ Methods map[string]int }
		_ = json.Unmarshal([]byte(resultText(t, evs)), &stats)
		return stats.Methods["tools/call"] > statsCalls // the stats calls and the sleep
	})
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("direct call after cancel = %v, want CANCELED", err)
	}
	waitFor(t, "the child to see notifications/cancelled", func() bool {
		evs, _ := callDirect(ctx, be, "stats", `{}`)
		var stats struct{ Cancelled []json.RawMessage }
		_ = json.Unmarshal([]byte(resultText(t, evs)), &stats)
		return len(stats.Cancelled) > 0
	})
}

// After Close a direct call fails as not running.
func TestDirectAfterClose(t *testing.T) {
	_, be := newDaemon(t)
	be.Close()
	if _, err := callDirect(ctxT(t), be, "echo", `{"message":"x"}`); !errors.Is(err, errStopped) {
		t.Fatalf("direct call after Close = %v, want %v", err, errStopped)
	}
}
