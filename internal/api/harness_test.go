package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The harness most of the package's tests share: a scripted backend behind
// a real gRPC server on a real Unix socket, a client connected to it, and
// small helpers for contexts, status codes and call streams.

// fakeBackend is a scripted supervisor. Unset funcs answer
// ErrUnknownServer.
type fakeBackend struct {
	call    func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error)
	list    func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error)
	status  []supervisor.Status
	logs    func(name string, n int) ([]transport.Line, error)
	control func(ctx context.Context, verb, name string) (supervisor.Status, error)
	// source is what every call and list reports as its cache source.
	source cache.Source
}

func (f *fakeBackend) CallCached(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, cache.Source, error) {
	if f.call == nil {
		return nil, cache.SourceFetched, fmt.Errorf("call %q: %w", server, supervisor.ErrUnknownServer)
	}
	resp, err := f.call(ctx, server, req, opts)
	return resp, f.source, err
}

func (f *fakeBackend) ListCached(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, cache.Source, error) {
	if f.list == nil {
		return nil, cache.SourceFetched, fmt.Errorf("list %q: %w", server, supervisor.ErrUnknownServer)
	}
	items, err := f.list(ctx, server, method, base, opts)
	return items, f.source, err
}

func (f *fakeBackend) ClearCache(name string) (int, error) {
	if name != "" && !contains(f.Names(), name) {
		return 0, fmt.Errorf("clear cache %q: %w", name, supervisor.ErrUnknownServer)
	}
	return 0, nil
}

func (f *fakeBackend) ctl(ctx context.Context, verb, name string) (supervisor.Status, error) {
	if f.control == nil {
		return supervisor.Status{}, fmt.Errorf("%s %q: %w", verb, name, supervisor.ErrUnknownServer)
	}
	return f.control(ctx, verb, name)
}

func (f *fakeBackend) Start(ctx context.Context, name string) (supervisor.Status, error) {
	return f.ctl(ctx, "start", name)
}

func (f *fakeBackend) Stop(ctx context.Context, name string) (supervisor.Status, error) {
	return f.ctl(ctx, "stop", name)
}

func (f *fakeBackend) Restart(ctx context.Context, name string) (supervisor.Status, error) {
	return f.ctl(ctx, "restart", name)
}

func (f *fakeBackend) Status() []supervisor.Status { return f.status }

func (f *fakeBackend) ServerStatus(name string) (supervisor.Status, error) {
	for _, s := range f.status {
		if s.Name == name {
			return s, nil
		}
	}
	return supervisor.Status{}, supervisor.ErrUnknownServer
}

func (f *fakeBackend) Logs(name string, n int) ([]transport.Line, error) {
	if f.logs == nil {
		return nil, supervisor.ErrUnknownServer
	}
	return f.logs(name, n)
}

func (f *fakeBackend) Names() []string {
	var names []string
	for _, s := range f.status {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// harness is a real gRPC server on a real Unix socket in front of a fake
// backend, and a client connected to it.
type harness struct {
	srv    *core.Service
	client mcpdv1.McpdClient
	conn   *grpc.ClientConn
	path   string
}

func newHarness(t *testing.T, b core.Backend, dialOpts ...grpc.DialOption) *harness {
	t.Helper()
	return newHarnessLog(t, b, zaptest.NewLogger(t), dialOpts...)
}

// newHarnessLog is newHarness with the server logging to log.
func newHarnessLog(t *testing.T, b core.Backend, log *zap.Logger, dialOpts ...grpc.DialOption) *harness {
	t.Helper()
	path := filepath.Join(tempdir.Short(t), "s", "mcpd.sock")
	l, err := socket.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := core.New(b, core.Options{Logger: log, SocketPath: path, ConfigPath: "/cfg.json"})
	gs := NewGRPCServer(srv, log)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn := dial(t, path, dialOpts...)
	return &harness{srv: srv, client: mcpdv1.NewMcpdClient(conn), conn: conn, path: path}
}

func dial(t *testing.T, path string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, err error, code codes.Code, contains string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error = %v, want code %v", err, code)
	}
	if !strings.Contains(status.Convert(err).Message(), contains) {
		t.Fatalf("error message %q does not contain %q", status.Convert(err).Message(), contains)
	}
}

// recvAll reads a call stream to its end.
func recvAll(stream grpc.ServerStreamingClient[mcpdv1.CallToolEvent]) ([]*mcpdv1.CallToolEvent, error) {
	var evs []*mcpdv1.CallToolEvent
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
