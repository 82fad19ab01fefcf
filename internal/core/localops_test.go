package core

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// newLocalService is the service on a real supervisor of one lazy fake
// server, "fake" (pin mode warn), with no gRPC server at all, and an app
// in process.
func newLocalService(t *testing.T) (*Service, *App) {
	t.Helper()
	cmd, args := fakemcp.Command()
	log := zaptest.NewLogger(t)
	sup := supervisor.New(supervisor.Options{
		Specs: []supervisor.Spec{{
			Name: "fake", Command: cmd, Args: args, Env: map[string]string{fakemcp.EnvMode: "legacy"},
			Protocol: session.ProtocolLegacy, Pin: string(pin.ModeWarn), RequestTimeout: 20 * time.Second,
		}},
		Pins:   pin.NewBook(pin.NewStore(filepath.Join(t.TempDir(), "pins"))),
		Logger: log,
	})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("supervisor Run: %v", err)
		}
	})
	srv := New(sup, Options{Logger: log, ConfigPath: "/cfg.json"})
	app := srv.NewLocalApp(TransportDashboard, "plain app", os.Geteuid(), os.Getpid())
	t.Cleanup(app.Close)
	return srv, app
}

// fakeStatus is the fake's entry of the app's status.
func fakeStatus(t *testing.T, app *App) service.ServerStatus {
	t.Helper()
	st, err := app.Status(ctxT(t))
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if len(st.Servers) != 1 || st.Servers[0].Name != "fake" {
		t.Fatalf("Status servers = %+v, want the fake alone", st.Servers)
	}
	return st.Servers[0]
}

// An app in process controls a server, reads its status and logs, lists
// and calls its tools and reviews its pins in plain values, with no gRPC
// server: what the dashboard does.
func TestLocalAppPlainOperations(t *testing.T) {
	_, app := newLocalService(t)
	ctx := ctxT(t)

	if st, err := app.Status(ctx); err != nil || st.ConfigPath != "/cfg.json" || st.Pid != os.Getpid() {
		t.Fatalf("Status = %+v, %v; want the config path and mcpd's pid", st, err)
	}
	if s := fakeStatus(t, app); s.State != service.StateStopped || s.Pid != 0 {
		t.Fatalf("lazy server before its start: %s pid %d, want stopped", s.State, s.Pid)
	}
	started, err := app.StartServer(ctx, "fake")
	if err != nil || started.State != service.StateReady || started.Pid <= 0 {
		t.Fatalf("StartServer = %s pid %d, %v; want ready with a pid", started.State, started.Pid, err)
	}
	s := fakeStatus(t, app)
	if s.State != service.StateReady || s.Pid != started.Pid || s.StartedAt.IsZero() || len(s.ServerInfo) == 0 {
		t.Fatalf("status after the start = %+v, want ready, pid %d, started, its serverInfo", s, started.Pid)
	}
	lists, err := app.List(ctx, "fake", "tools/list", service.Options{})
	if err != nil || len(lists) != 1 || !strings.Contains(string(lists[0].Items), `"echo"`) {
		t.Fatalf("tools/list = %+v, %v; want the fake's tools", lists, err)
	}
	resp, err := app.SendRequest(ctx, service.Request{Server: "fake", Method: "tools/call",
		Params:  json.RawMessage(`{"name":"echo","arguments":{"message":"plain hello"}}`),
		Options: service.Options{Timeout: time.Minute, Client: service.Client{Name: "plain app"}}}, nil)
	if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), "plain hello") {
		t.Fatalf("tools/call = %+v, %v; want the echo", resp, err)
	}
	if s := fakeStatus(t, app); s.CallsTotal == 0 {
		t.Errorf("calls total after a call = %d", s.CallsTotal)
	}

	// The child's stderr is read on its own: the line of the call may
	// come a moment after the answer.
	var text []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lines, err := app.Logs(ctx, "fake", 50)
		if err != nil {
			t.Fatalf("Logs: %v", err)
		}
		text = text[:0]
		for _, l := range lines {
			text = append(text, l.Text)
		}
		if strings.Contains(strings.Join(text, "\n"), "recv tools/call") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs = %q, want the fake's stderr of the call", text)
		}
	}

	tc, err := app.ToolChanges(ctx, "fake", service.Options{})
	if err != nil || tc.Server != "fake" || tc.PinMode != string(pin.ModeWarn) || len(tc.Changes) != 0 {
		t.Fatalf("ToolChanges = %+v, %v; want mode warn and no change", tc, err)
	}
	if approved, err := app.ApproveTools(ctx, "fake", nil, service.Options{}); err != nil || len(approved) != 0 {
		t.Fatalf("ApproveTools = %v, %v; want nothing to approve", approved, err)
	}

	if st, err := app.RestartServer(ctx, "fake"); err != nil || st.State != service.StateReady || st.Pid == started.Pid {
		t.Fatalf("RestartServer = %s pid %d, %v; want ready with a new pid", st.State, st.Pid, err)
	}
	if st, err := app.StopServer(ctx, "fake"); err != nil || st.State != service.StateStopped || !st.ExplicitlyStopped {
		t.Fatalf("StopServer = %+v, %v; want stopped by the operator", st, err)
	}
}

// The plain operations refuse what the gRPC ones refuse, with the same
// codes.
func TestLocalAppPlainOperationErrors(t *testing.T) {
	_, app := newLocalService(t)
	ctx := ctxT(t)
	_, err := app.StartServer(ctx, "")
	wantServiceCode(t, err, service.InvalidArgument, "server name required")
	_, err = app.StopServer(ctx, "nope")
	wantServiceCode(t, err, service.NotFound, "nope")
	_, err = app.Logs(ctx, "fake", -1)
	wantServiceCode(t, err, service.InvalidArgument, "must not be negative")
	_, err = app.Logs(ctx, "nope", 0)
	wantServiceCode(t, err, service.NotFound, "nope")
	_, err = app.ToolChanges(ctx, "", service.Options{})
	wantServiceCode(t, err, service.InvalidArgument, "server name required")
	_, err = app.ApproveTools(ctx, "fake", nil, service.Options{Timeout: -time.Second})
	wantServiceCode(t, err, service.InvalidArgument, "")
}

// The plain operations are charged to the request memory budget, as the
// gRPC calls are: refused when what the caller also holds does not fit,
// and released when they return.
func TestLocalAppPlainOperationsCharged(t *testing.T) {
	srv := New(supervisor.New(supervisor.Options{}),
		Options{Logger: zaptest.NewLogger(t), RequestMemoryBudget: 1 << 20})
	app := srv.NewLocalApp(TransportDashboard, "plain app", 0, 0)
	ops := map[string]func(ctx context.Context) error{
		"Status":        func(ctx context.Context) error { _, err := app.Status(ctx); return err },
		"Logs":          func(ctx context.Context) error { _, err := app.Logs(ctx, "s", 1); return err },
		"StartServer":   func(ctx context.Context) error { _, err := app.StartServer(ctx, "s"); return err },
		"StopServer":    func(ctx context.Context) error { _, err := app.StopServer(ctx, "s"); return err },
		"RestartServer": func(ctx context.Context) error { _, err := app.RestartServer(ctx, "s"); return err },
		"ToolChanges":   func(ctx context.Context) error { _, err := app.ToolChanges(ctx, "s", service.Options{}); return err },
		"ApproveTools": func(ctx context.Context) error {
			_, err := app.ApproveTools(ctx, "s", nil, service.Options{})
			return err
		},
	}
	for name, op := range ops {
		err := op(WithAlsoHeld(context.Background(), 2<<20))
		wantServiceCode(t, err, service.ResourceExhausted, "request memory budget")
		if used := srv.budget.used.Load(); used != 0 {
			t.Errorf("%s: budget still holds %d bytes", name, used)
		}
	}
	if _, err := app.Status(context.Background()); err != nil {
		t.Fatalf("Status within the budget: %v", err)
	}
	if used := srv.budget.used.Load(); used != 0 {
		t.Errorf("budget still holds %d bytes after Status", used)
	}
}

// wantServiceCode fails unless err is a service error of code whose
// message contains contains: what an in-process call fails with.
func wantServiceCode(t *testing.T, err error, code service.Code, contains string) {
	t.Helper()
	if service.CodeOf(err) != code {
		t.Fatalf("error = %v, want code %v", err, code)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error message %q does not contain %q", err.Error(), contains)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
