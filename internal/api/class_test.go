package api

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// wantClass fails unless err is a status of code carrying mcpd's
// ErrorInfo of reason with metadata md (nil: none).
func wantClass(t *testing.T, err error, code codes.Code, reason mcpdv1.ErrorReason, md map[string]string) {
	t.Helper()
	err = toStatus(err) // as the gRPC door says it
	if status.Code(err) != code {
		t.Errorf("error = %v, want code %v", err, code)
	}
	got, gotMD := mcpdv1.ReasonOf(err)
	if got != reason {
		t.Errorf("reason = %v, want %v (error %v)", got, reason, err)
	}
	if !maps.Equal(gotMD, md) {
		t.Errorf("metadata = %v, want %v", gotMD, md)
	}
}

// Each class of domain error reaches an app over gRPC as its code and an
// ErrorInfo naming the class and what failed; its message is the
// domain error's own.
func TestErrorClassesOverGRPC(t *testing.T) {
	type want struct {
		code   codes.Code
		reason mcpdv1.ErrorReason
		md     map[string]string
	}
	tests := map[string]struct {
		err  error
		want want
	}{
		"unknown": {&supervisor.UnknownServerError{Name: "unknown"},
			want{codes.NotFound, mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_SERVER, map[string]string{"server": "unknown"}}},
		"withheld": {&pin.WithheldError{Server: "withheld", Change: pin.Change{Tool: "t", Kind: pin.KindChanged, Members: []string{"description"}}},
			want{codes.FailedPrecondition, mcpdv1.ErrorReason_ERROR_REASON_TOOL_WITHHELD, map[string]string{"server": "withheld", "tool": "t", "change": "changed"}}},
		"timeout": {fmt.Errorf("wrapped: %w", &supervisor.TimeoutError{Server: "timeout", Bound: supervisor.BoundRequestTimeout, After: 30 * time.Second}),
			want{codes.DeadlineExceeded, mcpdv1.ErrorReason_ERROR_REASON_TIMED_OUT, map[string]string{"server": "timeout", "bound": "requestTimeout", "after": "30s"}}},
		"calltimeout": {&supervisor.TimeoutError{Server: "calltimeout", Bound: supervisor.BoundCallTimeout, After: 1500 * time.Millisecond},
			want{codes.DeadlineExceeded, mcpdv1.ErrorReason_ERROR_REASON_TIMED_OUT, map[string]string{"server": "calltimeout", "bound": "timeout", "after": "1.5s"}}},
		"unavailable": {fmt.Errorf("held down: %w", supervisor.ErrUnavailable),
			want{codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE, nil}},
		"exited": {fmt.Errorf("call: %w", session.ErrClosed),
			want{codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE, nil}},
		"shutdown": {supervisor.ErrShuttingDown,
			want{codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SHUTTING_DOWN, nil}},
		"login": {&oauth.LoginRequiredError{Server: "login", Reason: "no token"},
			want{codes.Unauthenticated, mcpdv1.ErrorReason_ERROR_REASON_LOGIN_REQUIRED, map[string]string{"server": "login"}}},
		"invalid": {fmt.Errorf("call: %w: params", supervisor.ErrInvalid),
			want{codes.InvalidArgument, mcpdv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, nil}},
		"limit": {fmt.Errorf("x: %w", supervisor.ErrInstanceLimit),
			want{codes.ResourceExhausted, mcpdv1.ErrorReason_ERROR_REASON_INSTANCE_LIMIT, nil}},
		"large": {fmt.Errorf("x: %w", session.ErrResponseTooLarge),
			want{codes.ResourceExhausted, mcpdv1.ErrorReason_ERROR_REASON_RESPONSE_TOO_LARGE, nil}},
		// No class: a deadline none of mcpd's bounds names, and mcpd's bugs.
		"deadline": {fmt.Errorf("x: %w", context.DeadlineExceeded), want{codes.DeadlineExceeded, 0, nil}},
		"other":    {fmt.Errorf("boom"), want{codes.Internal, 0, nil}},
	}
	h := newHarness(t, &fakeBackend{call: func(_ context.Context, server string, _ *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
		return nil, tests[server].err
	}})
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := h.client.Complete(ctxT(t), &mcpdv1.CompleteRequest{Server: name, ParamsJson: `{}`})
			wantClass(t, err, tt.want.code, tt.want.reason, tt.want.md)
			if msg := status.Convert(err).Message(); msg != tt.err.Error() {
				t.Errorf("message = %q, want the domain error's %q", msg, tt.err.Error())
			}
		})
	}
}
