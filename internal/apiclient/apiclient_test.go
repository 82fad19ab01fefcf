package apiclient

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeMcpd is a gRPC server of the mcpd.v1 service on a real Unix socket
// that records the metadata of the calls it takes.
type fakeMcpd struct {
	mcpdv1.UnimplementedMcpdServer
	mu   sync.Mutex
	seen []metadata.MD
}

func (f *fakeMcpd) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, md)
}

// last is the metadata of the latest call.
func (f *fakeMcpd) last(t *testing.T) metadata.MD {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		t.Fatal("mcpd took no call")
	}
	return f.seen[len(f.seen)-1]
}

// ReadResource answers with a result of the size its URI states in bytes.
func (f *fakeMcpd) ReadResource(ctx context.Context, in *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	f.record(ctx)
	n := 0
	for _, c := range in.GetUri() {
		n = n*10 + int(c-'0')
	}
	return &mcpdv1.McpResponse{Server: in.GetServer(), ResultJson: strings.Repeat("x", n)}, nil
}

func (f *fakeMcpd) CallTool(in *mcpdv1.CallToolRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	f.record(stream.Context())
	return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_MessageJson{MessageJson: "{}"}})
}

// serve starts a fakeMcpd on a socket in a new directory, and returns the
// socket's path.
func serve(t *testing.T) (*fakeMcpd, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "apiclient") // short: a socket path has at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "mcpd.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMcpd{}
	gs := grpc.NewServer()
	mcpdv1.RegisterMcpdServer(gs, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(ln)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	return f, path
}

func dial(t *testing.T, path string, opts ...Option) mcpdv1.McpdClient {
	t.Helper()
	conn, err := Dial(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return mcpdv1.NewMcpdClient(conn)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// keys are the metadata mcpd reads, as the fake server saw them.
func keys(md metadata.MD) map[string][]string {
	out := map[string][]string{}
	for _, k := range []string{mcpdv1.MetadataClientName, mcpdv1.MetadataClientVersion, mcpdv1.MetadataProfile, mcpdv1.MetadataRoot} {
		if v := md.Get(k); len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

// TestMetadataArrives: the metadata of a call's context (Outgoing) and of
// its connection (EveryCall) reach mcpd, on unary calls and streams, and
// the context's word wins over the connection's.
func TestMetadataArrives(t *testing.T) {
	f, path := serve(t)
	client := dial(t, path, EveryCall(Metadata{Client: "conn-app", Root: "/work/a"}))
	ctx := Outgoing(ctxT(t), Metadata{Client: "app", Version: "1.2", Profile: "safe"})
	want := map[string][]string{
		mcpdv1.MetadataClientName:    {"app"},
		mcpdv1.MetadataClientVersion: {"1.2"},
		mcpdv1.MetadataProfile:       {"safe"},
		mcpdv1.MetadataRoot:          {"/work/a"},
	}
	if _, err := client.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Server: "s", Uri: "2"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, keys(f.last(t))); diff != "" {
		t.Errorf("unary call's metadata (-want +got):\n%s", diff)
	}
	stream, err := client.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, keys(f.last(t))); diff != "" {
		t.Errorf("stream's metadata (-want +got):\n%s", diff)
	}
}

// TestNoMetadata: a connection without EveryCall and a context without
// Outgoing send none of mcpd's keys.
func TestNoMetadata(t *testing.T) {
	f, path := serve(t)
	client := dial(t, path)
	ctx := Outgoing(ctxT(t), Metadata{})
	if _, err := client.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Uri: "0"}); err != nil {
		t.Fatal(err)
	}
	if got := keys(f.last(t)); len(got) != 0 {
		t.Errorf("metadata = %v, want none of mcpd's keys", got)
	}
}

// TestOutgoingReplaces: a later Outgoing replaces the keys it sets (a
// bridge names its host in place of mcpdctl) and keeps the others.
func TestOutgoingReplaces(t *testing.T) {
	f, path := serve(t)
	client := dial(t, path)
	ctx := Outgoing(ctxT(t), Metadata{Client: "mcpdctl", Version: "1.0"})
	ctx = Outgoing(ctx, Metadata{Client: "claude-code", Root: "/r"})
	if _, err := client.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Uri: "0"}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		mcpdv1.MetadataClientName:    {"claude-code"},
		mcpdv1.MetadataClientVersion: {"1.0"},
		mcpdv1.MetadataRoot:          {"/r"},
	}
	if diff := cmp.Diff(want, keys(f.last(t))); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

// TestLargeResponse: a result over gRPC's default 4 MiB limit arrives.
func TestLargeResponse(t *testing.T) {
	_, path := serve(t)
	client := dial(t, path, Reconnect(10*time.Millisecond, 100*time.Millisecond, time.Second))
	const size = 9 << 20
	resp, err := client.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Uri: "9437184"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(resp.GetResultJson()); got != size {
		t.Errorf("result of %d bytes, want %d", got, size)
	}
}

// TestRelativePath: Dial makes the socket's path absolute, as a unix://
// target needs.
func TestRelativePath(t *testing.T) {
	_, path := serve(t)
	t.Chdir(filepath.Dir(path))
	client := dial(t, filepath.Base(path))
	if _, err := client.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Uri: "1"}); err != nil {
		t.Fatal(err)
	}
}

// TestDeps: the package links nothing of this module but the contract
// and the service's plain vocabulary (internal/service, standard library
// and jsonrpc only), so that mcpdctl may import it.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/mcpd-dev/mcpd/"
	for _, d := range strings.Fields(string(out)) {
		switch d {
		case module + "proto/mcpd/v1", module + "internal/apiclient", module + "internal/service", module + "internal/jsonrpc":
			continue
		}
		if strings.HasPrefix(d, module) {
			t.Errorf("internal/apiclient depends on %s", d)
		}
	}
}

// blockedMcpd answers GetStatus by waiting until the call ends, and
// ListServers with an UNAVAILABLE of its own (with no class, which mcpd
// always gives: any status it sends is its answer).
type blockedMcpd struct {
	mcpdv1.UnimplementedMcpdServer
	started chan struct{}
}

func (b *blockedMcpd) GetStatus(ctx context.Context, _ *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	close(b.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b *blockedMcpd) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return nil, status.Error(codes.Unavailable, `server "x" is crash-looping`)
}

// TestLostConnection tells a call cut by mcpd going away from mcpd's own
// UNAVAILABLE and from a call that found no mcpd at all.
func TestLostConnection(t *testing.T) {
	none := dial(t, filepath.Join(t.TempDir(), "mcpd.sock"), TellLostCalls())
	if _, err := none.GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{}); err == nil || LostConnection(err) {
		t.Fatalf("call with no mcpd: %v, want an error that is no lost connection", err)
	}
	b := &blockedMcpd{started: make(chan struct{})}
	sock, stop := mcpdtest.ServeStoppable(t, b)
	c := dial(t, sock, TellLostCalls())
	if _, err := c.ListServers(ctxT(t), &mcpdv1.ListServersRequest{}); status.Code(err) != codes.Unavailable || LostConnection(err) {
		t.Fatalf("mcpd's own UNAVAILABLE: %v, want it as mcpd said it", err)
	}
	got := make(chan error, 1)
	go func() { // owned: read below
		_, err := c.GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
		got <- err
	}()
	<-b.started
	stop()
	if err := <-got; !LostConnection(err) || status.Code(err) != codes.Unavailable {
		t.Fatalf("call cut by mcpd going away: %v, want a lost connection", err)
	}
}
