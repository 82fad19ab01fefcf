package api

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// An app naming no configured server gets NOT_FOUND; that is the app's
// mistake, logged at debug, not a warning in the daemon's log.
func TestUnknownServerLoggedAtDebug(t *testing.T) {
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		return nil, fmt.Errorf("%w %q", supervisor.ErrUnknownServer, server)
	}}
	core, logs := observer.New(zapcore.DebugLevel)
	h := newHarnessLog(t, b, zap.New(core))
	stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: "nosuch", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(stream); status.Code(err) != codes.NotFound {
		t.Fatalf("CallTool err = %v, want NOT_FOUND", err)
	}
	if _, err := h.client.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Server: "nosuch", Uri: "x://y"}); status.Code(err) != codes.NotFound {
		t.Fatalf("ReadResource err = %v, want NOT_FOUND", err)
	}
	found := 0
	for _, e := range logs.All() {
		if e.ContextMap()["server"] != "nosuch" {
			continue
		}
		found++
		if e.Level != zapcore.DebugLevel {
			t.Errorf("%s %q logged at %s, want debug", e.Message, e.ContextMap()["method"], e.Level)
		}
	}
	if found != 2 {
		t.Errorf("%d log lines name the unknown server, want 2 (one a call)", found)
	}
}
