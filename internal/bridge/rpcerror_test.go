package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// classed is a status error of mcpd's, of class reason with metadata md,
// as the bridge's gRPC backend (internal/bridgegrpc) gives it: the service's error.
func classed(t *testing.T, code codes.Code, reason mcpdv1.ErrorReason, md map[string]string, msg string) error {
	t.Helper()
	st, err := status.New(code, msg).WithDetails(mcpdv1.NewErrorInfo(reason, md))
	if err != nil {
		t.Fatal(err)
	}
	return apiclient.ServiceError(st.Err())
}

// plain is a status error of mcpd's of no class, as the bridge's
// the gRPC backend gives it.
func plain(code codes.Code, msg string) error {
	return apiclient.ServiceError(status.Error(code, msg))
}

// The host's JSON-RPC error for a failure of mcpd's API follows its
// class, not its message: the code, the data naming the class and
// whether the message gets the server's name in front.
func TestRPCErrorByClass(t *testing.T) {
	const srv = "s"
	up := func() bool { return false }
	notRunning := func() error { return errors.New("mcpd is not running") }
	tests := []struct {
		name     string
		err      error
		code     int64
		reason   string // "" for no data
		md       map[string]string
		wantText string
	}{
		// Messages chosen not to look like mcpd's: only the class counts.
		{"unavailable naming the server", classed(t, codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE, map[string]string{"server": srv}, "held down"),
			jsonrpc.CodeInternalError, "ERROR_REASON_SERVER_UNAVAILABLE", map[string]string{"server": srv}, "held down"},
		{"unavailable not naming it", classed(t, codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SHUTTING_DOWN, nil, "bye"),
			jsonrpc.CodeInternalError, "ERROR_REASON_SHUTTING_DOWN", nil, `server "s" is unavailable: bye`},
		{"unavailable of another server", classed(t, codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE, map[string]string{"server": "other"}, `server "s" down`),
			jsonrpc.CodeInternalError, "ERROR_REASON_SERVER_UNAVAILABLE", map[string]string{"server": "other"}, `server "s" is unavailable: server "s" down`},
		{"unknown server", classed(t, codes.NotFound, mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_SERVER, map[string]string{"server": srv}, "nope"),
			jsonrpc.CodeInvalidParams, "ERROR_REASON_UNKNOWN_SERVER", map[string]string{"server": srv}, "nope"},
		{"not in profile", classed(t, codes.NotFound, mcpdv1.ErrorReason_ERROR_REASON_NOT_IN_PROFILE, map[string]string{"server": srv, "profile": "p"}, "nope"),
			jsonrpc.CodeInvalidParams, "ERROR_REASON_NOT_IN_PROFILE", map[string]string{"server": srv, "profile": "p"}, "nope"},
		{"invalid", classed(t, codes.InvalidArgument, mcpdv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, nil, "bad"),
			jsonrpc.CodeInvalidParams, "ERROR_REASON_INVALID_REQUEST", nil, "bad"},
		{"timed out", classed(t, codes.DeadlineExceeded, mcpdv1.ErrorReason_ERROR_REASON_TIMED_OUT, map[string]string{"server": srv, "bound": "requestTimeout", "after": "30s"}, "slow"),
			jsonrpc.CodeInternalError, "ERROR_REASON_TIMED_OUT", map[string]string{"server": srv, "bound": "requestTimeout", "after": "30s"}, "slow"},
		{"login", classed(t, codes.Unauthenticated, mcpdv1.ErrorReason_ERROR_REASON_LOGIN_REQUIRED, map[string]string{"server": srv}, "log in"),
			jsonrpc.CodeInternalError, "ERROR_REASON_LOGIN_REQUIRED", map[string]string{"server": srv}, "mcpd: log in"},
		// No class: by the gRPC code, without data.
		{"deadline of no bound", plain(codes.DeadlineExceeded, "timed out after 3s"), jsonrpc.CodeInternalError, "", nil, `server "s": request timed out`},
		{"unclassed not found", plain(codes.NotFound, "no such"), jsonrpc.CodeInvalidParams, "", nil, "no such"},
		{"unclassed unavailable", plain(codes.Unavailable, `server "s" is gone`), jsonrpc.CodeInternalError, "", nil, `server "s" is unavailable: server "s" is gone`},
		{"internal", plain(codes.Internal, "boom"), jsonrpc.CodeInternalError, "", nil, "mcpd: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := RPCError(context.Background(), tt.err, srv, up, notRunning)
			if e.Code != tt.code {
				t.Errorf("code = %d, want %d", e.Code, tt.code)
			}
			if e.Message != tt.wantText {
				t.Errorf("message = %q, want %q", e.Message, tt.wantText)
			}
			if tt.reason == "" {
				if e.Data != nil {
					t.Errorf("data = %s, want none", e.Data)
				}
				return
			}
			var d errorData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("data %s: %v", e.Data, err)
			}
			if d.Reason != tt.reason || !maps.Equal(d.Metadata, tt.md) {
				t.Errorf("data = %+v, want reason %s metadata %v", d, tt.reason, tt.md)
			}
		})
	}

	// mcpd unreachable: whatever the class, the host is told so.
	down := func() bool { return true }
	err := classed(t, codes.Unavailable, mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE, nil, "x")
	if e := RPCError(context.Background(), err, srv, down, notRunning); e.Message != "mcpd is not running" || e.Code != jsonrpc.CodeInternalError {
		t.Errorf("down: %+v", e)
	}
}

// A withheld tool's refusal is known by its class, whatever its message
// says; another FAILED_PRECONDITION is not one.
func TestWithheldByClass(t *testing.T) {
	withheld := classed(t, codes.FailedPrecondition, mcpdv1.ErrorReason_ERROR_REASON_TOOL_WITHHELD,
		map[string]string{"server": "s", "tool": "t", "change": "new"}, "approve it first")
	res, ok := withheldResult("tools/call", withheld)
	if !ok {
		t.Fatal("a TOOL_WITHHELD refusal is not a result")
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || !r.IsError || len(r.Content) != 1 || r.Content[0].Text != "mcpd: approve it first" {
		t.Errorf("result = %s (%v)", res, err)
	}
	if _, ok := withheldResult("prompts/get", withheld); ok {
		t.Error("a refusal of another method became a tools/call result")
	}
	other := plain(codes.FailedPrecondition, `tool "t" of server "s" is withheld: its definition is new`)
	if _, ok := withheldResult("tools/call", other); ok {
		t.Error("an unclassed FAILED_PRECONDITION was taken for a withheld tool by its message")
	}
}
