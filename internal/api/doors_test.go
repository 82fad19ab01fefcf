package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/bridgegrpc"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// doorCase is a failure of a class as a tools/call of server meets it,
// and how every door says it.
type doorCase struct {
	err   error         // what the domain returns
	code  codes.Code    // the gRPC door's code
	class service.Class // the class at every door
	md    map[string]string
	rpc   int64 // the bridge's JSON-RPC code; 0: a tools/call result with isError
}

// doorCases are the failures of TestClassesAtEveryDoor, by server name.
func doorCases() map[string]doorCase {
	notInProfile := service.NewError(service.NotInProfile, map[string]string{"server": "notinprofile", "profile": "p"},
		(&supervisor.UnknownServerError{Name: "notinprofile"}).Error()) // as the profile gate says it
	return map[string]doorCase{
		"unknown": {&supervisor.UnknownServerError{Name: "unknown"},
			codes.NotFound, service.UnknownServer, map[string]string{"server": "unknown"}, jsonrpc.CodeInvalidParams},
		"withheld": {&pin.WithheldError{Server: "withheld", Change: pin.Change{Tool: "t", Kind: pin.KindAdded}},
			codes.FailedPrecondition, service.ToolWithheld, map[string]string{"server": "withheld", "tool": "t", "change": "new"}, 0},
		"timedout": {fmt.Errorf("call: %w", &supervisor.TimeoutError{Server: "timedout", Bound: supervisor.BoundCallTimeout, After: 2 * time.Second}),
			codes.DeadlineExceeded, service.TimedOut, map[string]string{"server": "timedout", "bound": "timeout", "after": "2s"}, jsonrpc.CodeInternalError},
		"login": {&oauth.LoginRequiredError{Server: "login", Reason: "no token"},
			codes.Unauthenticated, service.LoginRequired, map[string]string{"server": "login"}, jsonrpc.CodeInternalError},
		// The profile gate's own refusal, made by the API.
		"notinprofile": {notInProfile,
			codes.NotFound, service.NotInProfile, map[string]string{"server": "notinprofile", "profile": "p"}, jsonrpc.CodeInvalidParams},
		"crashloop": {fmt.Errorf("server %q is crash-looping: %w", "crashloop", supervisor.ErrUnavailable),
			codes.Unavailable, service.ServerUnavailable, nil, jsonrpc.CodeInternalError},
		"exited": {fmt.Errorf("call: %w", session.ErrClosed),
			codes.Unavailable, service.ServerUnavailable, nil, jsonrpc.CodeInternalError},
	}
}

// A failure keeps its class, its metadata and its message at every door:
// the gRPC API (code and ErrorInfo), the in-process API the daemon's own
// faces call (service.Error), and the bridge in front of either (the
// JSON-RPC error's code and data), over stdio with the gRPC backend and
// in process as mcpd's HTTP face and bridge socket map it. No door reads
// a message.
func TestClassesAtEveryDoor(t *testing.T) {
	cases := doorCases()
	var fb fakeBackend
	fb.call = func(_ context.Context, server string, _ *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
		return nil, cases[server].err
	}
	for name := range cases {
		fb.status = append(fb.status, supervisor.Status{Name: name, State: supervisor.StateReady})
	}
	h := newHarness(t, &fb)
	app := h.srv.NewLocalApp(core.TransportHTTP, "doors", -1, 0)
	t.Cleanup(app.Close)
	// The bridges run at once: each waits for a subscription the harness
	// does not serve before it answers (the bridge's singleStartWait).
	answers := map[string]chan bridgeAnswer{}
	for name := range cases {
		ch := make(chan bridgeAnswer, 1)
		answers[name] = ch
		go func() { ch <- bridgeCall(h.path, name) }() // owned: each test below waits for its answer
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := tc.err.Error()
			_, err := h.client.CallToolUnary(ctxT(t), &mcpdv1.CallToolRequest{Server: name, Tool: "t"})
			t.Run("grpc", func(t *testing.T) {
				wantClass(t, err, tc.code, mcpdv1.ErrorReason(mcpdv1.ErrorReason_value[string(tc.class)]), tc.md)
			})
			if status.Convert(err).Message() != msg {
				t.Errorf("gRPC message %q, want %q", status.Convert(err).Message(), msg)
			}
			t.Run("client", func(t *testing.T) { wantServiceError(t, apiclient.ServiceError(err), tc, msg) })

			_, err = app.SendRequest(ctxT(t), service.Request{Server: name, Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`)}, nil)
			t.Run("inprocess", func(t *testing.T) { wantServiceError(t, err, tc, msg) })
			t.Run("bridge-inprocess", func(t *testing.T) {
				notRunning := func() error { return errors.New("not running") }
				e := bridge.RPCError(ctxT(t), err, name, func() bool { return false }, notRunning)
				if tc.rpc != 0 {
					wantRPCError(t, e, tc)
				}
			})
			t.Run("bridge-stdio", func(t *testing.T) {
				a := <-answers[name]
				if a.err != nil {
					t.Fatal(a.err)
				}
				wantBridgeAnswer(t, a.answer, tc)
			})
		})
	}
}

// wantServiceError fails unless err is a service.Error of tc's class, code
// and metadata, with message msg.
func wantServiceError(t *testing.T, err error, tc doorCase, msg string) {
	t.Helper()
	e, ok := errors.AsType[*service.Error](err)
	if !ok {
		t.Fatalf("error %v (%T) is no service.Error", err, err)
	}
	if e.Class != tc.class || e.Code != tc.class.Code() || !maps.Equal(e.Metadata, tc.md) || e.Message != msg {
		t.Errorf("service error {%s %v %v %q}, want {%s %v %v %q}", e.Class, e.Code, e.Metadata, e.Message, tc.class, tc.class.Code(), tc.md, msg)
	}
	if got := grpcCodes[e.Code]; got != tc.code {
		t.Errorf("code %v says gRPC %v, want %v", e.Code, got, tc.code)
	}
}

// wantRPCError fails unless e is the JSON-RPC error of tc: its code, and
// data naming its class and metadata.
func wantRPCError(t *testing.T, e *jsonrpc.Error, tc doorCase) {
	t.Helper()
	if e == nil {
		t.Fatal("no JSON-RPC error")
	}
	var d struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("data %s: %v", e.Data, err)
	}
	if e.Code != tc.rpc || d.Reason != string(tc.class) || !maps.Equal(d.Metadata, tc.md) {
		t.Errorf("JSON-RPC error %d %q data %s, want code %d, reason %s, metadata %v", e.Code, e.Message, e.Data, tc.rpc, tc.class, tc.md)
	}
}

// wantBridgeAnswer fails unless ans, the bridge's answer to a tools/call,
// is tc's: a JSON-RPC error of its class, or for a withheld tool a result
// with isError.
func wantBridgeAnswer(t *testing.T, ans map[string]json.RawMessage, tc doorCase) {
	t.Helper()
	if tc.rpc == 0 {
		var res struct {
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(ans["result"], &res); err != nil || !res.IsError {
			t.Errorf("answer %v, want a result with isError", ans)
		}
		return
	}
	var e jsonrpc.Error
	if err := json.Unmarshal(ans["error"], &e); err != nil {
		t.Fatalf("answer %v: %v", ans, err)
	}
	wantRPCError(t, &e, tc)
}

// bridgeAnswer is a bridge's answer to a host's request, or why there is
// none.
type bridgeAnswer struct {
	answer map[string]json.RawMessage
	err    error
}

// bridgeCall runs a bridge of server over stdio against mcpd at sock (its
// gRPC backend, as mcpdctl bridge runs it), sends it a host's tools/call
// of tool "t" and returns its answer.
func bridgeCall(sock, server string) (a bridgeAnswer) {
	be, err := bridgegrpc.Dial(sock, func() error { return errors.New("mcpd is not running") })
	if err != nil {
		return bridgeAnswer{err: err}
	}
	defer be.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { // owned: waited for below
		opts := bridge.Options{Names: []string{server}, MaxLine: bridge.DefaultMaxLine, StartWait: 10 * time.Second}
		done <- bridge.ServeStdio(context.Background(), be, opts, inR, outW)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // owned: ends when the bridge closes outW
		if err := <-done; err != nil && a.err == nil {
			a.err = fmt.Errorf("bridge: %w", err)
		}
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+meta+`,"name":"t"}}`+"\n") // owned: the pipe's reader is the bridge
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return bridgeAnswer{err: fmt.Errorf("bridge wrote %q: %w", sc.Text(), err)}
		}
		if string(m["id"]) == "1" {
			return bridgeAnswer{answer: m}
		}
	}
	return bridgeAnswer{err: errors.New("the bridge ended without answering")}
}

// Every class of mcpd.v1 is one of the service's, and every class and
// code crosses the gRPC door and back (toStatus, apiclient.ServiceError)
// unchanged, with its gRPC code what ErrorReason's documentation says.
func TestClassesRoundTrip(t *testing.T) {
	wantCodes := map[service.Class]codes.Code{
		service.UnknownServer: codes.NotFound, service.NotInProfile: codes.NotFound, service.UnknownProfile: codes.NotFound,
		service.ToolWithheld: codes.FailedPrecondition, service.TimedOut: codes.DeadlineExceeded,
		service.ServerUnavailable: codes.Unavailable, service.ShuttingDown: codes.Unavailable,
		service.LoginRequired: codes.Unauthenticated, service.NotRemote: codes.FailedPrecondition,
		service.InvalidRequest: codes.InvalidArgument, service.InstanceLimit: codes.ResourceExhausted,
		service.ResponseTooLarge: codes.ResourceExhausted,
	}
	keys := map[string]string{
		service.MetaServer: mcpdv1.ErrorServer, service.MetaTool: mcpdv1.ErrorTool, service.MetaProfile: mcpdv1.ErrorProfile,
		service.MetaBound: mcpdv1.ErrorBound, service.MetaAfter: mcpdv1.ErrorAfter, service.MetaChange: mcpdv1.ErrorChange,
		service.BoundRequestTimeout: mcpdv1.BoundRequestTimeout, service.BoundCallTimeout: mcpdv1.BoundCallTimeout,
	}
	for k, v := range keys {
		if k != v {
			t.Errorf("the service says %q, mcpd.v1 %q", k, v)
		}
	}
	for _, reason := range mcpdv1.ErrorReason_name {
		if _, ok := wantCodes[service.Class(reason)]; !ok && reason != "ERROR_REASON_UNSPECIFIED" {
			t.Errorf("mcpd.v1 reason %s is no class of the service's", reason)
		}
	}
	md := map[string]string{service.MetaServer: "s"}
	for c := range wantCodes {
		if _, ok := mcpdv1.ErrorReason_value[string(c)]; !ok {
			t.Errorf("class %s is no mcpd.v1 reason", c)
		}
		st := toStatus(service.NewError(c, md, "msg"))
		wantClass(t, st, wantCodes[c], mcpdv1.ErrorReason(mcpdv1.ErrorReason_value[string(c)]), md)
		back, ok := errors.AsType[*service.Error](apiclient.ServiceError(st))
		if !ok || back.Class != c || back.Code != c.Code() || !maps.Equal(back.Metadata, md) || back.Message != "msg" {
			t.Errorf("class %s came back as %+v", c, back)
		}
	}
	for code := range grpcCodes {
		back, ok := errors.AsType[*service.Error](apiclient.ServiceError(toStatus(service.Errorf(code, "msg"))))
		if !ok || back.Class != "" || back.Code != code || back.Message != "msg" {
			t.Errorf("code %v came back as %+v", code, back)
		}
	}
}
