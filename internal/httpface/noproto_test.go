package httpface

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/bridge"
)

// A host's lists, call, read and resource subscription through the HTTP
// face reach the child through the in-process service (the bridge's
// Backend takes plain values only: no mcpd.v1 request is built), on one
// server's endpoint and on the aggregate.
func TestHTTPHostRequestsBuildNoProto(t *testing.T) {
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
	for _, tc := range []struct{ path, tool string }{
		{"/servers/fake/mcp", "echo"},
		{"/mcp", "fake__echo"},
	} {
		host := newTestHost(t, "http://"+ln.Addr().String()+tc.path, "noproto-host")
		host.initialize() // lists tools
		for _, req := range []struct{ body, want string }{
			{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":{"message":"plain"}}}`, `plain`},
			{`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, `fake://hello`},
			{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"fake://hello"}}`, `"text":"hello"`},
			{`{"jsonrpc":"2.0","id":6,"method":"prompts/list"}`, `"prompts"`},
			{`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"fake://hello"}}`, `"result"`},
		} {
			if code, got := host.post(req.body); code != http.StatusOK || !strings.Contains(got, req.want) {
				t.Fatalf("%s: %s: %d %s", tc.path, req.body, code, got)
			}
		}
	}
}
