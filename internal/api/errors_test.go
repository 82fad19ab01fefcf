package api

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

func TestToStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"unknown server", fmt.Errorf("call %q: %w", "x", supervisor.ErrUnknownServer), codes.NotFound},
		{"unavailable", fmt.Errorf("server %q in crash loop (exit status 1): %w", "x", supervisor.ErrUnavailable), codes.Unavailable},
		{"invalid", fmt.Errorf("params: %w", supervisor.ErrInvalid), codes.InvalidArgument},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"canceled", fmt.Errorf("call: %w", context.Canceled), codes.Canceled},
		{"session closed", fmt.Errorf("call: %w", session.ErrClosed), codes.Unavailable},
		{"invalid request", fmt.Errorf("tools/call %q: %w: bad token", "x", session.ErrInvalidRequest), codes.InvalidArgument},
		{"handshake", fmt.Errorf("start: %w", session.ErrHandshake), codes.Unavailable},
		{"transport closed", fmt.Errorf("write: %w", transport.ErrClosed), codes.Unavailable},
		{"command not found", fmt.Errorf("start: %w", transport.ErrCommandNotFound), codes.Unavailable},
		{"response too large", fmt.Errorf("server %q: tools/call: %w: the response was 9 bytes", "x", session.ErrResponseTooLarge), codes.ResourceExhausted},
		{"other", errors.New("boom"), codes.Internal},
		// A chain holding several sentinels maps to the most specific one.
		{"unknown wins over unavailable", errors.Join(supervisor.ErrUnavailable, supervisor.ErrUnknownServer), codes.NotFound},
		{"unavailable wins over its timeout cause", fmt.Errorf("start timed out: %w: %w", supervisor.ErrUnavailable, context.DeadlineExceeded), codes.Unavailable},
		{"deadline wins over closed", fmt.Errorf("%w: %w", session.ErrClosed, context.DeadlineExceeded), codes.DeadlineExceeded},
		{"already a status", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toStatus(tt.err)
			st, ok := status.FromError(got)
			if !ok {
				t.Fatalf("toStatus(%v) = %v, not a status", tt.err, got)
			}
			if st.Code() != tt.code {
				t.Errorf("code = %v, want %v", st.Code(), tt.code)
			}
			if _, isStatus := status.FromError(tt.err); isStatus {
				if got != tt.err {
					t.Errorf("status error was not returned unchanged: %v", got)
				}
				return
			}
			if st.Message() != tt.err.Error() {
				t.Errorf("message = %q, want err.Error() = %q", st.Message(), tt.err.Error())
			}
		})
	}
	if err := toStatus(nil); err != nil {
		t.Errorf("toStatus(nil) = %v, want nil", err)
	}
}

// bigServer is a legacy MCP server in sh: it answers initialize, answers
// every tools/call with a 10 kB text, and every other request with {}.
const bigServer = `while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\),.*/\1/p')
  [ -n "$id" ] || continue
  case $line in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}}\n' "$id" ;;
  *'"method":"tools/call"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' "$id"
    head -c 10000 /dev/zero | tr '\0' x
    printf '"}]}}\n' ;;
  *)
    printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
  esac
done`

// A tool result longer than the server's maxLineSize reaches the app as
// RESOURCE_EXHAUSTED naming the limit, long before the request's deadline.
func TestOversizeResponseIsResourceExhausted(t *testing.T) {
	sup := supervisor.New(supervisor.Options{
		Specs: []supervisor.Spec{{
			Name: "big", Command: "/bin/sh", Args: []string{"-c", bigServer},
			Protocol: session.ProtocolLegacy, MaxLineSize: 4096, RequestTimeout: 20 * time.Second,
		}},
		Logger: zaptest.NewLogger(t),
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
	h := newHarness(t, sup)

	stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: "big", Tool: "t"})
	if err == nil {
		_, err = recvAll(stream)
	}
	wantCode(t, err, codes.ResourceExhausted, "maxLineSize is 4096 bytes")
}
