package core

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// The operator calls of an app in process: what the gRPC GetStatus,
// GetLogs, StartServer, StopServer, RestartServer, GetToolChanges and
// ApproveTools do, through the same functions, in the service's values.
// Like the gRPC server's interceptors, they charge the request memory
// budget; the pin calls, which name a server as a call does, are tracked
// as the app's calls in flight on it. Their errors are the service's
// (service.Error).

// admit is what every call of the app goes through first, as a gRPC
// call does in the interceptors: it is charged n bytes (and ctx's
// WithAlsoHeld) to the request memory budget, and runs in the instance
// scope of the app (and of clientName, the name its request gives, ""
// for none). release ends the charge.
func (a *App) admit(ctx context.Context, n int64, clientName string) (_ context.Context, release func(), _ error) {
	ctx = a.Context(ctx)
	release, err := a.s.Charge(n + alsoHeld(ctx))
	if err != nil {
		return nil, nil, err
	}
	return a.s.WithScope(ctx, clientName), release, nil // instances.go
}

// Status reports the daemon and every configured server, as GetStatus
// does; the connected apps are Service.Status's.
func (a *App) Status(ctx context.Context) (service.Status, error) {
	_, release, err := a.admit(ctx, 0, "")
	if err != nil {
		return service.Status{}, err
	}
	defer release()
	return a.s.daemonStatus(a.s.apps.snapshot()), nil
}

// Logs returns the last n stderr lines of server (0: DefaultLogLines;
// capped at MaxLogLines), as GetLogs does; server "" is mcpd's own log
// when it keeps one.
func (a *App) Logs(ctx context.Context, server string, n int) ([]service.LogLine, error) {
	_, release, err := a.admit(ctx, int64(len(server)+4), "")
	if err != nil {
		return nil, err
	}
	defer release()
	return a.s.Logs(server, n)
}

// logLineOf is l as the service gives it.
func logLineOf(l transport.Line) service.LogLine {
	return service.LogLine{Time: l.Time, Text: l.Text, Truncated: l.Truncated, Pid: l.Pid}
}

// StartServer starts server and waits until it is ready or failed, as the
// gRPC StartServer does, returning its status then.
func (a *App) StartServer(ctx context.Context, server string) (service.ServerStatus, error) {
	return a.control(ctx, server, a.s.sup.Start)
}

// StopServer stops server, which stays stopped until started again, as
// the gRPC StopServer does.
func (a *App) StopServer(ctx context.Context, server string) (service.ServerStatus, error) {
	return a.control(ctx, server, a.s.sup.Stop)
}

// RestartServer stops server if it runs and starts it again, as the gRPC
// RestartServer does.
func (a *App) RestartServer(ctx context.Context, server string) (service.ServerStatus, error) {
	return a.control(ctx, server, a.s.sup.Restart)
}

// control runs op, the supervisor's start, stop or restart, on server as
// a call of the app.
func (a *App) control(ctx context.Context, server string, op func(context.Context, string) (supervisor.Status, error)) (service.ServerStatus, error) {
	ctx, release, err := a.admit(ctx, int64(len(server)), "")
	if err != nil {
		return service.ServerStatus{}, err
	}
	defer release()
	return a.s.Control(ctx, server, op)
}

// ToolChanges reports how server's tools differ from their pinned
// definitions, as the gRPC GetToolChanges does.
func (a *App) ToolChanges(ctx context.Context, server string, o service.Options) (service.ToolChanges, error) {
	ctx, end, err := a.enter(ctx, int64(len(server))+optionsSize(o), server, o.Client.Name)
	if err != nil {
		return service.ToolChanges{}, err
	}
	defer end()
	return a.s.ToolChanges(ctx, server, o)
}

// ApproveTools accepts the current definitions of server's changed tools
// (none named: every changed tool), as the gRPC ApproveTools does, and
// returns the tools approved.
func (a *App) ApproveTools(ctx context.Context, server string, tools []string, o service.Options) ([]string, error) {
	n := int64(len(server)) + optionsSize(o)
	for _, t := range tools {
		n += int64(len(t))
	}
	ctx, end, err := a.enter(ctx, n, server, o.Client.Name)
	if err != nil {
		return nil, err
	}
	defer end()
	return a.s.ApproveTools(ctx, server, tools, o)
}
