package session

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// TestStampFastMatchesGeneralPath checks that the modern fast path sends
// the same params, as JSON values, as the general decode-and-encode path,
// and that it steps aside whenever the general path is needed.
func TestStampFastMatchesGeneralPath(t *testing.T) {
	s := &Session{opts: Options{ClientInfo: DefaultClientInfo}}
	tests := []struct {
		name     string
		params   string
		info     string
		caps     string
		wantFast bool
	}{
		{name: "no params", params: "", wantFast: true},
		{name: "empty object", params: `{}`, wantFast: true},
		{name: "empty object with spaces", params: `{ }`, wantFast: true},
		{name: "tool call", params: `{"name":"echo","arguments":{"message":"hi"}}`, wantFast: true},
		{name: "app info and caps", params: `{"name":"echo"}`, info: `{"name":"app","version":"1"}`, caps: `{"sampling":{}}`, wantFast: true},
		{name: "app _meta", params: `{"name":"echo","_meta":{"progressToken":"p","k":1}}`, wantFast: false},
		{name: "_meta spelled with escapes", params: `{"\u005fmeta":{"k":1}}`, wantFast: false},
		{name: "_meta inside a value", params: `{"arguments":{"_meta":1}}`, wantFast: false},
		{name: "not an object", params: `[1]`, wantFast: false},
		{name: "invalid", params: `{"a":}`, wantFast: false},
		{name: "invalid caps", params: `{}`, caps: `{`, wantFast: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw, info, caps json.RawMessage
			if tt.params != "" {
				raw = json.RawMessage(tt.params)
			}
			if tt.info != "" {
				info = json.RawMessage(tt.info)
			}
			if tt.caps != "" {
				caps = json.RawMessage(tt.caps)
			}
			ok := s.canStampFast(raw, info, caps, false)
			var fast []byte
			if ok {
				w := &wire{}
				s.appendStampFast(w, raw, nil, jsonrpc.ModernVersion, info, caps)
				fast = w.bytes()
			}
			if ok != tt.wantFast {
				t.Fatalf("fast path taken = %v, want %v (%s)", ok, tt.wantFast, fast)
			}
			if !ok {
				return
			}
			var top map[string]json.RawMessage
			if raw != nil {
				if err := json.Unmarshal(raw, &top); err != nil {
					t.Fatal(err)
				}
			}
			slow, err := s.stamp(top, nil, jsonrpc.ModernVersion, info, caps)
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(fast, &gotV); err != nil {
				t.Fatalf("fast path produced invalid JSON %s: %v", fast, err)
			}
			if err := json.Unmarshal(slow, &wantV); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("params differ (-general +fast):\n%s", diff)
			}
		})
	}
}
