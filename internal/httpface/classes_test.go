package httpface

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// A failure reaches a host of mcpd's HTTP face, whose bridge calls the
// service in process, with its class as the JSON-RPC error's data, as it
// reaches one over the gRPC socket: the code, the reason and the metadata
// come from the class, not from the message.
func TestHTTPFaceClasses(t *testing.T) {
	cmd, args := fakemcp.Command()
	log := zaptest.NewLogger(t)
	var srv *core.Service
	sup := supervisor.New(supervisor.Options{
		Specs: []supervisor.Spec{
			{Name: "slow", Command: cmd, Args: args, Autostart: true,
				Env: map[string]string{fakemcp.EnvMode: "legacy"}, RequestTimeout: 300 * time.Millisecond},
		},
		Logger:     log,
		ClientInfo: json.RawMessage(`{"name":"mcpd-test","version":"0"}`),
	})
	srv = core.New(sup, core.Options{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- sup.Run(ctx) }() // owned: the cleanup waits for it
	be := NewBackend(srv)
	h := bridge.NewHTTPHandler(be, bridge.HTTPOptions{Warnf: t.Logf})
	ln, err := Listen(must(ParseAddr("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	f := Serve(ln, h, Options{Logger: log, Server: srv, WantUID: -1})
	t.Cleanup(func() {
		h.Close()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		be.Close()
		cancel()
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("supervisor: %v", err)
		}
	})

	host := newTestHost(t, f.URL()+"/servers/slow/mcp", "classes")
	host.initialize()
	code, body := host.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":10000}}}`)
	if code != 200 {
		t.Fatalf("tools/call: %d %s", code, body)
	}
	e := answerError(t, body)
	var d struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("error %+v: data: %v", e, err)
	}
	want := map[string]string{service.MetaServer: "slow", service.MetaBound: service.BoundRequestTimeout, service.MetaAfter: "300ms"}
	if e.Code != jsonrpc.CodeInternalError || d.Reason != string(service.TimedOut) || !maps.Equal(d.Metadata, want) {
		t.Errorf("error %d %q data %s, want %d with reason %s and metadata %v", e.Code, e.Message, e.Data, jsonrpc.CodeInternalError, service.TimedOut, want)
	}

	// The same call on the backend itself: the service's error, classed.
	_, err = be.Send(ctxT(t), service.Request{Server: "slow", Method: "tools/call", Params: json.RawMessage(`{"name":"sleep","arguments":{"ms":10000}}`)}, nil)
	if se, ok := errors.AsType[*service.Error](err); !ok || se.Class != service.TimedOut || se.Code != service.DeadlineExceeded || !maps.Equal(se.Metadata, want) {
		t.Errorf("backend's error %#v, want a service.Error of class %s and metadata %v", err, service.TimedOut, want)
	}
	_, err = be.Send(ctxT(t), service.Request{Server: "nosuch", Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}, nil)
	if se, ok := errors.AsType[*service.Error](err); !ok || se.Class != service.UnknownServer || se.Metadata[service.MetaServer] != "nosuch" {
		t.Errorf("backend's error %#v, want a service.Error of class %s", err, service.UnknownServer)
	}
	if e := bridge.RPCError(ctxT(t), err, "nosuch", be.Down, be.NotRunning); e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(e.Data), string(service.UnknownServer)) {
		t.Errorf("backend's JSON-RPC error %+v, want invalid params with reason %s", e, service.UnknownServer)
	}
}

// answerError is the JSON-RPC error of body, an answer given as JSON or as
// one server-sent event.
func answerError(t *testing.T, body string) *jsonrpc.Error {
	t.Helper()
	for line := range strings.SplitSeq(body, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var m struct {
			Error *jsonrpc.Error `json:"error"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Error != nil {
			return m.Error
		}
	}
	t.Fatalf("no JSON-RPC error in %q", body)
	return nil
}
