package httpface

// The in-process path, tested without gRPC: this file imports neither
// gRPC nor the protocol buffers, and what it calls takes and returns
// plain Go values.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// callDirect sends tools/call name(args) through the backend's in-process
// Send and returns the events passed to it and the response.
func callDirect(ctx context.Context, be *Backend, name, args string) ([]service.Event, *service.Response, error) {
	var evs []service.Event
	resp, err := be.Send(ctx, service.Request{Server: "fake", Method: "tools/call",
		Params: json.RawMessage(`{"_meta":{"progressToken":"t"},"name":"` + name + `","arguments":` + args + `}`)},
		func(ev service.Event) { evs = append(evs, ev) })
	return evs, resp, err
}

// directText is the text of a response's first content.
func directText(t *testing.T, resp *service.Response) string {
	t.Helper()
	if resp == nil || resp.Error != nil {
		t.Fatalf("response %+v: want a result", resp)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %s: %v", resp.Result, err)
	}
	return res.Content[0].Text
}

// A direct call passes the progress in order, then returns the response.
func TestDirectProgressThenResponse(t *testing.T) {
	_, be := newDaemon(t)
	evs, resp, err := callDirect(ctxT(t), be, "progress", `{"count":3}`)
	if err != nil {
		t.Fatalf("direct call: %v", err)
	}
	if len(evs) != 3 || directText(t, resp) != "done" {
		t.Fatalf("events %v, response %+v: want 3 progress then done", evs, resp)
	}
	for i, ev := range evs {
		var p struct{ Progress float64 }
		if ev.Kind != service.Progress || json.Unmarshal(ev.Params, &p) != nil || p.Progress != float64(i+1) {
			t.Fatalf("event %d = %+v, want progress %d", i, ev, i+1)
		}
	}
	if resp.Server != "fake" || resp.Cache != service.Fetched {
		t.Fatalf("response %+v: want server fake, fetched", resp)
	}
}

// A server's JSON-RPC error comes back in the response, not as the call's
// error.
func TestDirectServerError(t *testing.T) {
	_, be := newDaemon(t)
	resp, err := be.Send(ctxT(t), service.Request{Server: "fake", Method: "no/such/method"}, nil)
	if err != nil {
		t.Fatalf("direct call: %v", err)
	}
	if resp.Error == nil || resp.Error.Code != -32601 {
		t.Fatalf("response %+v: want the child's method-not-found error", resp)
	}
}

// A direct list gives each server's items, and a second one comes from
// the cache; a list of every server names each.
func TestDirectList(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	lists, err := be.List(ctx, "fake", "tools/list", service.Options{})
	if err != nil || len(lists) != 1 || lists[0].Server != "fake" || lists[0].Error != nil {
		t.Fatalf("tools/list of fake = %+v, %v", lists, err)
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(lists[0].Items, &tools); err != nil || len(tools) == 0 {
		t.Fatalf("items %s: %v", lists[0].Items, err)
	}
	again, err := be.List(ctx, "fake", "tools/list", service.Options{})
	if err != nil || len(again) != 1 || again[0].Cache != service.Hit {
		t.Fatalf("second tools/list = %+v, %v: want a cache hit", again, err)
	}
	all, err := be.List(ctx, "", "resources/list", service.Options{})
	if err != nil || len(all) != 1 || all[0].Server != "fake" || !strings.Contains(string(all[0].Items), "fake://hello") {
		t.Fatalf("resources/list of every server = %+v, %v", all, err)
	}
	if _, err := be.List(ctx, "fake", "tools/call", service.Options{}); err == nil {
		t.Fatal("a list of tools/call succeeded")
	}
}

// A direct read gives the resource, or the server's error for one it does
// not have.
func TestDirectRead(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	resp, err := be.Read(ctx, service.Read{Server: "fake", URI: "fake://hello"})
	if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `"text":"hello"`) {
		t.Fatalf("read fake://hello = %+v, %v", resp, err)
	}
	resp, err = be.Read(ctx, service.Read{Server: "fake", URI: "fake://nothing"})
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 {
		t.Fatalf("read fake://nothing = %+v, %v: want the server's invalid-params error", resp, err)
	}
}

// A host registered in process answers a child's request during a call,
// called directly by mcpd; its registration ends with its context.
func TestDirectServeHostAnswersSampling(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	hctx, cancel := context.WithCancel(ctx)
	registered := make(chan struct{})
	asked := make(chan string, 1)
	served := make(chan error, 1)
	go func() { // owned: its end is waited for below
		served <- be.ServeHost(hctx, service.HostRegistration{Sampling: true}, func() { close(registered) },
			func(_ context.Context, server, method string, _ json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
				asked <- server + " " + method
				return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"from the host"},"model":"m"}`), nil
			}, nil)
	}()
	<-registered
	_, resp, err := callDirect(ctx, be, "sample", `{}`)
	if err != nil || !strings.Contains(directText(t, resp), "from the host") {
		t.Fatalf("sample = %+v, %v", resp, err)
	}
	if got := <-asked; got != "fake sampling/createMessage" {
		t.Fatalf("the host was asked %q", got)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("ServeHost ended with %v", err)
	}
}

// After Close a direct call fails as not running.
func TestDirectAfterClose(t *testing.T) {
	_, be := newDaemon(t)
	be.Close()
	if _, _, err := callDirect(ctxT(t), be, "echo", `{"message":"x"}`); !errors.Is(err, errStopped) {
		t.Fatalf("direct call after Close = %v, want %v", err, errStopped)
	}
}

// A host's tools/call through the HTTP face reaches the child through the
// in-process service, and its answer reaches the host.
func TestDirectHTTPCallReachesChild(t *testing.T) {
	srv, be := newDaemon(t)
	h := bridge.NewHTTPHandler(be, bridge.HTTPOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := Serve(ln, h, Options{Server: srv, WantUID: -1})
	t.Cleanup(func() {
		h.Close()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	host := newTestHost(t, "http://"+ln.Addr().String()+"/servers/fake/mcp", "direct-host")
	host.initialize()
	code, body := host.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"through the face"}}}`)
	if code != http.StatusOK || !strings.Contains(body, "through the face") {
		t.Fatalf("tools/call: %d %s", code, body)
	}
	_, resp, err := callDirect(ctxT(t), be, "stats", `{}`)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	var stats struct{ Methods map[string]int }
	if err := json.Unmarshal([]byte(directText(t, resp)), &stats); err != nil || stats.Methods["tools/call"] < 2 {
		t.Fatalf("the child's stats %+v (%v): want the host's tools/call and the stats call", stats, err)
	}
}
