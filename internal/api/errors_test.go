package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
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
