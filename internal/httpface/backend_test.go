package httpface

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// newDaemon runs a supervisor with one legacy fake child "fake" and an
// core.Service over it, in process, and returns the server and a Backend.
func newDaemon(t *testing.T) (*core.Service, *Backend) {
	t.Helper()
	return newDaemonLogging(t, zaptest.NewLogger(t))
}

// newDaemonLogging is newDaemon logging to log.
func newDaemonLogging(t testing.TB, log *zap.Logger) (*core.Service, *Backend) {
	t.Helper()
	cmd, args := fakemcp.Command()
	var srv *core.Service
	sup := supervisor.New(supervisor.Options{
		Specs: []supervisor.Spec{{Name: "fake", Command: cmd, Args: args, Autostart: true,
			Env: map[string]string{fakemcp.EnvMode: "legacy"}, RequestTimeout: 30 * time.Second}},
		Logger:     log,
		ClientInfo: json.RawMessage(`{"name":"mcpd-test","version":"0"}`),
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			return srv.ServeChildRequest(ctx, server, method, params)
		},
	})
	srv = core.New(sup, core.Options{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- sup.Run(ctx) }()
	be := NewBackend(srv)
	t.Cleanup(func() {
		be.Close()
		cancel()
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("supervisor: %v", err)
		}
	})
	return srv, be
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestBackendListAndProgress(t *testing.T) {
	srv, be := newDaemon(t)
	ctx := ctxT(t)
	if be.Down() || be.Ready(ctx) != nil {
		t.Fatal("backend not ready while the daemon runs")
	}
	lt, err := be.List(ctx, "fake", "tools/list", service.Options{})
	if err != nil || len(lt) != 1 || !strings.Contains(string(lt[0].Items), `"echo"`) {
		t.Fatalf("List = %v, %v", lt, err)
	}
	evs, resp, err := callDirect(ctx, be, "progress", `{"count":3}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || directText(t, resp) != "done" {
		t.Fatalf("events %v: want 3 progress then done", evs)
	}
	// The calls' app is listed as an HTTP client.
	if _, apps := srv.Status(); len(apps) != 1 || apps[0].Transport != core.TransportHTTP {
		t.Fatalf("status apps = %v", apps)
	}
	// The servers are listed in plain values.
	servers, err := be.ListServers(ctx)
	if err != nil || len(servers.Servers) != 1 || servers.Servers[0].Name != "fake" || servers.Profile != nil {
		t.Fatalf("ListServers = %+v, %v", servers, err)
	}
	// Errors map as on the gRPC path.
	_, err = be.List(ctx, "nope", "tools/list", service.Options{})
	if e := bridge.RPCError(ctx, err, "nope", be.Down, be.NotRunning); e == nil || e.Code != -32602 {
		t.Fatalf("unknown server: %v → %v", err, e)
	}
}

func TestBackendCancelReachesChild(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	cctx, cancel := context.WithCancel(ctx)
	called := make(chan error, 1)
	go func() { // owned: its end is waited for below
		_, _, err := callDirect(cctx, be, "sleep", `{"ms":60000}`)
		called <- err
	}()
	// Cancel once the child has the call.
	statsCalls := 0
	waitFor(t, "the sleep call in flight", func() bool {
		statsCalls++
		_, resp, _ := callDirect(ctx, be, "stats", `{}`)
		var stats struct{ Methods map[string]int }
		_ = json.Unmarshal([]byte(directText(t, resp)), &stats)
		return stats.Methods["tools/call"] > statsCalls // the stats calls and the sleep
	})
	cancel()
	if err := <-called; service.CodeOf(err) != service.Canceled {
		t.Fatalf("call after cancel = %v, want CANCELED", err)
	}
	waitFor(t, "the child to see notifications/cancelled", func() bool {
		_, resp, _ := callDirect(ctx, be, "stats", `{}`)
		var stats struct{ Cancelled []json.RawMessage }
		_ = json.Unmarshal([]byte(directText(t, resp)), &stats)
		return len(stats.Cancelled) > 0
	})
}

// watch runs a subscription of be to the fake server's tools list on a
// goroutine, its events on the channel returned; Watch's return comes on
// the other once it ended.
func watch(ctx context.Context, be *Backend) (<-chan service.SubscriptionEvent, <-chan error) {
	events, ended := make(chan service.SubscriptionEvent, 16), make(chan error, 1)
	go func() {
		ended <- be.Watch(ctx, service.Watch{Servers: []string{"fake"}, ToolsListChanged: true}, func(ev service.SubscriptionEvent) error {
			select {
			case events <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return events, ended
}

func TestBackendWatch(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, ended := watch(sctx, be)
	if ack := <-events; ack.Kind != service.Ack || ack.Ack == nil {
		t.Fatalf("first event %+v: want the ack", ack)
	}
	if _, _, err := callDirect(ctx, be, "changed", `{"kind":"tools"}`); err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == service.ToolsListChanged {
			break
		}
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("Watch after cancel = %v, want nil", err)
	}
}

func TestBackendCloseEndsWatch(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	events, ended := watch(ctx, be)
	<-events // the ack
	be.Close()
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("Close did not end the subscription")
	}
	if !be.Down() || be.Ready(ctx) == nil {
		t.Fatal("a closed backend is not down")
	}
	if e := bridge.RPCError(ctx, service.Errorf(service.Unavailable, "x"), "fake", be.Down, be.NotRunning); !strings.Contains(e.Message, "stopping") {
		t.Fatalf("Error = %v", e)
	}
}

// waitFor polls cond until it holds, failing after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A call that passed the running check just before Close makes its app
// after Close: that app is closed at once, not left listed in status.
func TestBackendFallbackAfterCloseIsNotListed(t *testing.T) {
	srv, be := newDaemon(t)
	ctx := ctxT(t)
	be.Close()
	if a := be.app(ctx); a == nil {
		t.Fatal("no app for a call after Close")
	}
	if _, apps := srv.Status(); len(apps) != 0 {
		t.Fatalf("status apps after Close = %v; want none", apps)
	}
}
