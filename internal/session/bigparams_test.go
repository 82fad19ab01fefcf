package session

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// allocatedBytes returns the fewest bytes one run of f allocated, over a
// few runs (a background allocation only ever adds to a run).
func allocatedBytes(f func()) uint64 {
	best := ^uint64(0)
	var before, after runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}

// TestLargeParamsNotCopied: a request's params, which may be tens of MiB,
// are not copied on their way into the message for the child: the message
// is parts, the large ones slices of the params, for a legacy child as for
// a modern one whose envelope is stamped, and also when the app's progress
// token is replaced (only _meta is decoded and encoded again).
func TestLargeParamsNotCopied(t *testing.T) {
	const size = 2 << 20
	big := `"name":"big","arguments":{"data":"` + strings.Repeat("x", size) + `"}`
	s := &Session{opts: Options{Server: "s", ClientInfo: DefaultClientInfo}}
	for _, tc := range []struct{ name, params string }{
		{"plain", `{` + big + `}`},
		{"progress token", `{"_meta":{"progressToken":"p","k":1},` + big + `}`},
	} {
		for _, version := range []string{"", jsonrpc.ModernVersion} {
			req := &Request{Method: "tools/call", Params: json.RawMessage(tc.params), ClientInfo: json.RawMessage(`{"name":"app","version":"1"}`)}
			var parts [][]byte
			n := allocatedBytes(func() {
				var err error
				if parts, err = s.encodeCall(7, req, version, &call{}); err != nil {
					t.Fatal(err)
				}
			})
			msg := joinParts(parts) // the Conn writes the parts as they are
			if !json.Valid(msg) || !strings.HasPrefix(string(msg), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`) {
				t.Fatalf("%s, version %q: message %.200s", tc.name, version, msg)
			}
			if n > size/4 {
				t.Errorf("%s, version %q: encoding %d MiB of params allocated %.2f times their size, want no copy",
					tc.name, version, size>>20, float64(n)/size)
			}
		}
	}
}

// TestSplicedParamsMatchGeneralPath: params whose _meta is rewritten keep
// the app's other members byte for byte, and are the same JSON value as
// the general decode-and-encode path gives; params it cannot splice (a
// repeated _meta, an escaped key) take the general path.
func TestSplicedParamsMatchGeneralPath(t *testing.T) {
	s := &Session{opts: Options{Server: "s", ClientInfo: DefaultClientInfo}}
	tests := []struct {
		name, params string
		spliced      bool
	}{
		{"string token", `{"_meta":{"progressToken":"p"},"name":"echo","arguments":{"m":"<&>"}}`, true},
		{"integer token and app keys", `{"name":"echo","_meta":{"k":[1,2],"progressToken":7}}`, true},
		{"spaces", `{ "name" : "echo" , "_meta" : { "progressToken" : "p" } }`, true},
		{"no token", `{"_meta":{"k":1},"arguments":{"progressToken":"x"}}`, true},
		{"repeated _meta", `{"_meta":{"k":1},"_meta":{"progressToken":"p"}}`, false},
		{"escaped key", `{"\u005fmeta":{"progressToken":"p"},"a":1}`, false},
	}
	for _, tt := range tests {
		raw := json.RawMessage(tt.params)
		members, ok := splitMembers(raw)
		metas := 0
		for _, m := range members {
			if string(m.key) == "_meta" {
				metas++
			}
		}
		if got := ok && metas <= 1; got != tt.spliced {
			t.Errorf("%s: spliced = %v, want %v", tt.name, got, tt.spliced)
		}
		for _, version := range []string{"", jsonrpc.ModernVersion} {
			w := &wire{}
			if err := s.appendParams(w, &Request{Method: "x", Params: raw}, version, &call{}); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			got := w.bytes()
			got = []byte(strings.TrimPrefix(string(got), paramsKey))
			var gotV map[string]any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("%s: invalid params %s: %v", tt.name, got, err)
			}
			// The general path, given the token the session chose.
			var top, meta map[string]json.RawMessage
			if err := json.Unmarshal(raw, &top); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal(top["_meta"], &meta)
			rewritten := meta["progressToken"] != nil
			if rewritten {
				meta["progressToken"], _ = json.Marshal(gotV["_meta"].(map[string]any)["progressToken"])
			}
			want := json.RawMessage(raw) // legacy, nothing to rewrite: as the app sent them
			if version != "" || rewritten {
				var err error
				if want, err = s.stamp(top, meta, version, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			var wantV map[string]any
			if err := json.Unmarshal(want, &wantV); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("%s, version %q (-general +spliced):\n%s", tt.name, version, diff)
			}
			for _, m := range members {
				if tt.spliced && string(m.key) != "_meta" && !strings.Contains(string(got), string(m.span)) {
					t.Errorf("%s, version %q: member %s not kept as written in %s", tt.name, version, m.span, got)
				}
			}
		}
	}
}

// TestArgumentsMember: Request.Arguments reaches the child as the params'
// "arguments" member, the same JSON value as params that hold it, on
// every path (legacy, modern, a progress token to rewrite, params that do
// not splice), and large arguments are not copied.
func TestArgumentsMember(t *testing.T) {
	s := &Session{opts: Options{Server: "s", ClientInfo: DefaultClientInfo}}
	args := `{"data":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, params := range []string{``, `{}`, `{"name":"big"}`, `{"_meta":{"progressToken":"p"},"name":"big"}`, `{"\u006eame":"big"}`} {
		whole := `{"arguments":` + args + `}`
		if params != "" && params != "{}" {
			whole = params[:len(params)-1] + `,"arguments":` + args + `}`
		}
		for _, version := range []string{"", jsonrpc.ModernVersion} {
			split := &Request{Method: "tools/call", Params: json.RawMessage(params), Arguments: json.RawMessage(args)}
			var parts [][]byte
			n := allocatedBytes(func() {
				var err error
				if parts, err = s.encodeCall(7, split, version, &call{}); err != nil {
					t.Fatal(err)
				}
			})
			want, err := s.encodeCall(7, &Request{Method: "tools/call", Params: json.RawMessage(whole)}, version, &call{})
			if err != nil {
				t.Fatal(err)
			}
			var got, wantV map[string]any
			if err := json.Unmarshal(joinParts(parts), &got); err != nil {
				t.Fatalf("params %s, version %q: %v", params, version, err)
			}
			if err := json.Unmarshal(joinParts(want), &wantV); err != nil {
				t.Fatal(err)
			}
			for _, m := range []map[string]any{got, wantV} { // the daemon's token differs
				if meta, ok := m["params"].(map[string]any)["_meta"].(map[string]any); ok {
					delete(meta, "progressToken")
				}
			}
			if diff := cmp.Diff(wantV, got); diff != "" {
				t.Errorf("params %s, version %q (-whole +split):\n%.2000s", params, version, diff)
			}
			if strings.Contains(params, `\u`) {
				continue // the general path encodes params again
			}
			if n > 1<<18 {
				t.Errorf("params %s, version %q: allocated %d bytes for 1 MiB of arguments, want no copy", params, version, n)
			}
		}
	}
}
