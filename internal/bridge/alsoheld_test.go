package bridge

import (
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// TestAlsoHeld: a request whose params are forwarded as the host wrote
// them holds nothing besides them; one whose envelope keys were left out
// (a copy) also holds the host's params.
func TestAlsoHeld(t *testing.T) {
	for _, tc := range []struct {
		params string
		held   bool
	}{
		{`{"name":"t","arguments":{"a":1}}`, false},
		{`{"_meta":{"progressToken":1},"name":"t"}`, false},
		{`{"_meta":{"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `","` + jsonrpc.MetaClientCapabilities + `":{}},"name":"t"}`, true},
	} {
		line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`)
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatal(err)
		}
		r := parseRequest(&m)
		p, err := r.forwardParams()
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if tc.held {
			want = int64(len(tc.params))
		}
		if got := r.alsoHeld(p); got != want {
			t.Errorf("%s: also held %d, want %d", tc.params, got, want)
		}
	}
}
