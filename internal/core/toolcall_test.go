package core

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// TestHostToolCallPartsAreViews: a host's tools/call params are split into
// their parts without copying them (the arguments may be tens of MiB), the
// last of a repeated member wins as json.Unmarshal's would, and a key with
// escapes is still found.
func TestHostToolCallPartsAreViews(t *testing.T) {
	params := json.RawMessage(`{"name":"echo","arguments":{"a":"xyz"},"_meta":{"k":1},"requestState":"s1"}`)
	p, err := hostToolCall("srv", params)
	if err != nil {
		t.Fatal(err)
	}
	if p.name != "echo" || p.requestState != "s1" || string(p.args) != `{"a":"xyz"}` || string(p.meta) != `{"k":1}` || p.inputs != nil {
		t.Fatalf("parts: %+v", p)
	}
	if &p.args[0] != &params[bytes.Index(params, []byte(`{"a"`))] {
		t.Error("the arguments were copied, want a view of the params")
	}

	p, err = hostToolCall("srv", json.RawMessage(`{"name":"one","name":"two","arguments":null}`))
	if err != nil || p.name != "two" || p.args != nil {
		t.Fatalf("repeated name: %+v, %v", p, err)
	}
	p, err = hostToolCall("srv", json.RawMessage(`{"n\u0061me":"esc","arguments":{}}`))
	if err != nil || p.name != "esc" || string(p.args) != `{}` {
		t.Fatalf("escaped key: %+v, %v", p, err)
	}
	if _, err := hostToolCall("srv", json.RawMessage(`{"name":3}`)); service.CodeOf(err) != service.InvalidArgument {
		t.Fatalf("a name that is no string: %v, want InvalidArgument", err)
	}
}
