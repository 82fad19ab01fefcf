package api

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// followBackend is a fakeBackend whose server "s" has a backlog of two
// stderr lines and then ends its log.
type followBackend struct{ *fakeBackend }

func (followBackend) FollowLogs(name string, n int) ([]transport.Line, <-chan transport.Line, func() int64, error) {
	if name != "s" {
		return nil, nil, nil, &supervisor.UnknownServerError{Name: name}
	}
	at := time.UnixMilli(1000)
	backlog := []transport.Line{{Time: at, Text: "one", Pid: 7}, {Time: at, Text: "two", Pid: 7, Truncated: true}}
	lines := make(chan transport.Line)
	close(lines)
	return backlog[max(0, len(backlog)-n):], lines, func() int64 { return 0 }, nil
}

// The gRPC FollowLogs and core.App.FollowLogs are one core: the same
// lines, and the same refusal of a negative count.
func TestFollowLogsDoors(t *testing.T) {
	b := followBackend{&fakeBackend{status: []supervisor.Status{{Name: "s"}}}}
	h := newHarness(t, b)
	stream, err := h.client.FollowLogs(ctxT(t), &mcpdv1.FollowLogsRequest{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var grpcLines []string
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		grpcLines = append(grpcLines, r.GetLine().GetText())
		if r.GetLine().GetPid() != 7 || r.GetLine().GetTimeUnixMs() != 1000 {
			t.Errorf("line %v, want pid 7 at 1000 ms", r.GetLine())
		}
	}

	app := h.srv.NewLocalApp(core.TransportHTTP, "logs", 0, 0)
	defer app.Close()
	var plain []service.LogLine
	if err := app.FollowLogs(context.Background(), service.LogFollow{Server: "s"}, nil, func(l service.LogLine) error {
		plain = append(plain, l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(grpcLines) != 2 || len(plain) != 2 || plain[0].Text != grpcLines[0] || plain[1].Text != grpcLines[1] || !plain[1].Truncated {
		t.Errorf("gRPC lines %q, in-process lines %+v; want one, two (truncated) by both", grpcLines, plain)
	}

	s2, err := h.client.FollowLogs(ctxT(t), &mcpdv1.FollowLogsRequest{Name: "s", Lines: -1})
	if err == nil {
		_, err = s2.Recv()
	}
	local := app.FollowLogs(context.Background(), service.LogFollow{Server: "s", Lines: -1}, nil, func(service.LogLine) error { return nil })
	if status.Code(err) != codes.InvalidArgument || service.CodeOf(local) != service.InvalidArgument {
		t.Errorf("negative lines: gRPC %v, in process %v; want INVALID_ARGUMENT by both", err, local)
	}
}
