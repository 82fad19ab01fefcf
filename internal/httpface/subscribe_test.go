package httpface

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// An app in process subscribes and updates its subscription in plain Go
// values (core.App.Subscribe, UpdateSubscription), with no mcpd.v1
// message: the acknowledgement names its id and what each server watches,
// the fake's resource URI can be added and removed by that id, an unknown
// id and an empty watch are refused by class, and the subscription ends
// with nil when its context does.
func TestLocalSubscribePlain(t *testing.T) {
	srv, _ := newDaemon(t)
	app := srv.NewLocalApp(core.TransportHTTP, "plain-sub", 0, 0)
	defer app.Close()
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()

	if err := app.Subscribe(ctx, service.Watch{Servers: []string{"fake"}}, func(service.SubscriptionEvent) error { return nil }); service.CodeOf(err) != service.InvalidArgument {
		t.Fatalf("an empty watch: %v, want INVALID_ARGUMENT", err)
	}

	acked := make(chan service.SubscriptionEvent, 1)
	done := make(chan error, 1)
	go func() { // owned: the test waits for done
		first := true
		done <- app.Subscribe(ctx, service.Watch{Servers: []string{"fake"}, ToolsListChanged: true, State: true,
			Client: service.Client{Name: "plain-sub", Version: "1"}}, func(ev service.SubscriptionEvent) error {
			if first {
				first = false
				acked <- ev
			}
			return nil
		})
	}()
	var ack service.SubscriptionEvent
	select {
	case ack = <-acked:
	case err := <-done:
		t.Fatalf("Subscribe ended before its acknowledgement: %v", err)
	}
	if ack.Kind != service.Ack || ack.Ack == nil || ack.Ack.ID == 0 || ack.Time.IsZero() {
		t.Fatalf("first event %+v, want an acknowledgement with an id and a time", ack)
	}
	if len(ack.Ack.Servers) != 1 || ack.Ack.Servers[0].Server != "fake" || !ack.Ack.Servers[0].ToolsListChanged {
		t.Errorf("acknowledged servers %+v, want fake watching its tools", ack.Ack.Servers)
	}

	if _, err := app.UpdateSubscription(ctx, service.SubscriptionUpdate{ID: ack.Ack.ID + 1000, Add: []string{"file:///a"}}); service.CodeOf(err) != service.NotFound {
		t.Errorf("update of an unknown subscription: %v, want NOT_FOUND", err)
	}
	if _, err := app.UpdateSubscription(ctx, service.SubscriptionUpdate{}); service.CodeOf(err) != service.InvalidArgument {
		t.Errorf("update without an id: %v, want INVALID_ARGUMENT", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Subscribe ended with %v when its context did, want nil", err)
	}
}

// An app in process follows a server's stderr in plain Go values
// (core.App.FollowLogs): opened comes before the first line, the
// child's lines come with its pid, and a negative count and an unknown
// server are refused by class.
func TestLocalFollowLogsPlain(t *testing.T) {
	srv, be := newDaemon(t)
	if _, _, err := callDirect(ctxT(t), be, "echo", `{"message":"to the log"}`); err != nil {
		t.Fatal(err) // the child is up, and has written to its stderr
	}
	app := srv.NewLocalApp(core.TransportHTTP, "plain-logs", 0, 0)
	defer app.Close()
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()

	none := func(service.LogLine) error { return nil }
	if err := app.FollowLogs(ctx, service.LogFollow{Server: "fake", Lines: -1}, nil, none); service.CodeOf(err) != service.InvalidArgument {
		t.Errorf("negative lines: %v, want INVALID_ARGUMENT", err)
	}
	if err := app.FollowLogs(ctx, service.LogFollow{Server: "nosuch"}, nil, none); service.CodeOf(err) != service.NotFound {
		t.Errorf("unknown server: %v, want NOT_FOUND", err)
	}

	opened := false
	var got service.LogLine
	errStop := errors.New("enough")
	err := app.FollowLogs(ctx, service.LogFollow{Server: "fake", Lines: 5}, func() { opened = true }, func(l service.LogLine) error {
		if !opened {
			t.Error("a line came before opened")
		}
		got = l
		return errStop
	})
	if err != nil {
		t.Fatalf("FollowLogs ended by its send: %v, want nil", err)
	}
	if got.Text == "" || got.Pid == 0 || got.Time.IsZero() {
		t.Errorf("line %+v, want the child's text, pid and time", got)
	}
}
