package api

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// newBudgetHarness is newHarness with a request memory budget.
func newBudgetHarness(t *testing.T, b core.Backend, budget int64) *harness {
	t.Helper()
	log := zaptest.NewLogger(t)
	path := filepath.Join(tempdir.Short(t), "s", "mcpd.sock")
	l, err := socket.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := core.New(b, core.Options{Logger: log, SocketPath: path, RequestMemoryBudget: budget})
	gs := NewGRPCServer(srv, log)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	conn := dial(t, path, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	return &harness{srv: srv, client: mcpdv1.NewMcpdClient(conn), conn: conn, path: path}
}

// TestRequestMemoryBudget: eight large tools/call at once against a
// budget that holds three: the three in flight are served, the other five
// are refused at once with RESOURCE_EXHAUSTED naming the budget, and once
// the three are done the budget is free again. (The e2e test of the same
// name sends 31 MiB requests to the real daemon; 4 MiB show the same here.)
func TestRequestMemoryBudget(t *testing.T) {
	const (
		inFlight = 3
		total    = 8
	)
	args := `{"data":"` + strings.Repeat("x", 4<<20) + `"}`
	req := &mcpdv1.CallToolRequest{Server: "s", Tool: "big", ArgumentsJson: args}
	size := int64(proto.Size(req))

	entered := make(chan struct{}, total)
	release := make(chan struct{})
	b := &fakeBackend{call: func(ctx context.Context, _ string, req *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &session.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
	}}
	h := newBudgetHarness(t, b, inFlight*size+size/2)

	call := func() error {
		stream, err := h.client.CallTool(ctxT(t), req)
		if err == nil {
			_, err = recvAll(stream)
		}
		return err
	}
	errs := make(chan error, total)
	var wg sync.WaitGroup
	for range total {
		wg.Go(func() { errs <- call() })
	}
	// The three charged calls wait in the backend; every other one has
	// been answered already.
	for range inFlight {
		<-entered
	}
	for range total - inFlight {
		err := <-errs
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "request memory budget") {
			t.Errorf("refused call: %v, want RESOURCE_EXHAUSTED naming the request memory budget", err)
		}
	}
	close(release)
	wg.Wait()
	for range inFlight {
		if err := <-errs; err != nil {
			t.Errorf("charged call: %v", err)
		}
	}
	if used := h.srv.RequestMemoryInUse(); used != 0 {
		t.Errorf("budget still holds %d bytes after every call ended", used)
	}
	// The budget is free: the next large call is served.
	if err := call(); err != nil {
		t.Fatalf("call after the others: %v", err)
	}
	<-entered
}

// TestRequestLargerThanBudget: a request beyond the whole budget is
// refused naming both sizes; small requests go on.
func TestRequestLargerThanBudget(t *testing.T) {
	h := newBudgetHarness(t, &fakeBackend{call: echoParams}, 1<<20)
	stream, err := h.client.SendRequest(ctxT(t), &mcpdv1.SendRequestRequest{Server: "s", Method: "x/y",
		ParamsJson: `{"a":"` + strings.Repeat("y", 2<<20) + `"}`})
	if err == nil {
		_, err = recvAll(stream)
	}
	wantCode(t, err, codes.ResourceExhausted, "exceeds the daemon's request memory budget of 1.0 MiB")
	if stream != nil {
		if got := stream.Trailer().Get(mcpdv1.MetadataDaemon); len(got) != 1 {
			t.Errorf("the refusal's trailer %s = %q, want it marked as mcpd's own", mcpdv1.MetadataDaemon, got)
		}
	}
	// A unary call refused by the budget, before it is tracked, is marked too.
	var trailer metadata.MD
	_, err = h.client.Complete(ctxT(t), &mcpdv1.CompleteRequest{Server: "s", ParamsJson: `{"a":"` + strings.Repeat("y", 2<<20) + `"}`}, grpc.Trailer(&trailer))
	wantCode(t, err, codes.ResourceExhausted, "request memory budget")
	if got := trailer.Get(mcpdv1.MetadataDaemon); len(got) != 1 {
		t.Errorf("the unary refusal's trailer %s = %q, want it marked as mcpd's own", mcpdv1.MetadataDaemon, got)
	}
	if _, err := h.client.Complete(ctxT(t), &mcpdv1.CompleteRequest{Server: "s", ParamsJson: `{}`}); err != nil {
		t.Fatal(err)
	}
}
