package bridge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The modern envelope's members, as a host writes them.
const (
	envVersion = `"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `"`
	envCaps    = `"` + jsonrpc.MetaClientCapabilities + `":{"roots":{}}`
	envInfo    = `"` + jsonrpc.MetaClientInfo + `":{"name":"h","version":"1"}`
)

// TestAlsoHeld: a request's params are forwarded as a view of the host's
// message, holding nothing besides it, whether or not they carried the
// modern envelope; the envelope's members are left out of them (the
// params written again over themselves), whatever else _meta holds and
// wherever it stands, and what is forwarded is the params without them,
// as compact as the host wrote them.
func TestAlsoHeld(t *testing.T) {
	for _, tc := range []struct {
		params, want string
	}{
		{`{"name":"t","arguments":{"a":1}}`, `{"name":"t","arguments":{"a":1}}`},
		{`{"_meta":{"progressToken":1},"name":"t"}`, `{"_meta":{"progressToken":1},"name":"t"}`},
		{`{"_meta":{` + envVersion + `,` + envCaps + `},"name":"t"}`, `{"name":"t"}`},
		{`{"name":"t","_meta":{` + envVersion + `,` + envCaps + `,` + envInfo + `}}`, `{"name":"t"}`},
		{`{"name":"t", "_meta" : { ` + envVersion + ` , "progressToken":"p", ` + envCaps + `},"arguments":{}}`,
			`{"name":"t","_meta":{"progressToken":"p"},"arguments":{}}`},
		{`{"_meta":{"progressToken":2,` + envVersion + `,` + envInfo + `,` + envCaps + `}}`, `{"_meta":{"progressToken":2}}`},
		{`{"_meta":{` + envVersion + `,` + envCaps + `,"x":[1,2]}}`, `{"_meta":{"x":[1,2]}}`},
	} {
		line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`)
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatal(err)
		}
		r := parseRequest(&m)
		if r.bad != nil {
			t.Fatalf("%s: %v", tc.params, r.bad)
		}
		p, err := r.forwardParams()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.alsoHeld(p); got != 0 {
			t.Errorf("%s: also held %d, want 0 (a view of the message)", tc.params, got)
		}
		var got, want any
		if err := json.Unmarshal(p, &got); err != nil {
			t.Fatalf("%s: forwarded %q, not JSON: %v", tc.params, p, err)
		}
		_ = json.Unmarshal([]byte(tc.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: forwarded %s, want %s", tc.params, p, tc.want)
		}
		if !strings.Contains(tc.params, " ") && string(p) != tc.want {
			// Compact as the host wrote it: mcpd need not compact it again.
			t.Errorf("%s: forwarded %s, want exactly %s", tc.params, p, tc.want)
		}
		if r.modern && (string(r.caps) != `{"roots":{}}` || r.info != nil && string(r.info) != `{"name":"h","version":"1"}`) {
			t.Errorf("%s: caps %s, info %s kept", tc.params, r.caps, r.info)
		}
		if r.modern && r.meta[jsonrpc.MetaProtocolVersion] != nil {
			t.Errorf("%s: the envelope is still in _meta: %v", tc.params, r.meta)
		}
	}
}
