package api

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestTimeoutMsRange: a timeout_ms that time.Duration cannot hold is
// refused instead of wrapping around (2^58+1 ms used to become a 1 ms
// deadline, 2^58 ms the server's default); the largest one it can hold
// reaches the supervisor intact, which caps it.
func TestTimeoutMsRange(t *testing.T) {
	got := make(chan time.Duration, 1)
	h := newHarness(t, &fakeBackend{call: func(_ context.Context, _ string, _ *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		got <- opts.Timeout
		return &session.Response{Result: json.RawMessage(`{}`)}, nil
	}})
	tests := []struct {
		name string
		ms   int64
		want time.Duration // 0: refused
	}{
		{"2^58+1", 1<<58 + 1, 0},
		{"2^58", 1 << 58, 0},
		{"max int64", 1<<63 - 1, 0},
		{"one past the maximum", MaxTimeoutMs + 1, 0},
		{"maximum", MaxTimeoutMs, time.Duration(MaxTimeoutMs) * time.Millisecond},
		{"1.5s", 1500, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &mcpdv1.CallOptions{TimeoutMs: tt.ms}
			calls := []func() error{
				func() error {
					_, err := h.client.Complete(ctxT(t), &mcpdv1.CompleteRequest{Server: "s", ParamsJson: `{}`, Options: opts})
					return err
				},
				func() error {
					stream, err := h.client.SendRequest(ctxT(t), &mcpdv1.SendRequestRequest{Server: "s", Method: "ping", Options: opts})
					if err == nil {
						_, err = recvAll(stream)
					}
					return err
				},
			}
			for _, call := range calls {
				err := call()
				if tt.want == 0 {
					wantCode(t, err, codes.InvalidArgument, "options.timeout_ms")
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if d := <-got; d != tt.want {
					t.Errorf("supervisor got timeout %v, want %v", d, tt.want)
				}
			}
		})
	}
}
