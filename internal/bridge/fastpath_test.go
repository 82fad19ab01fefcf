package bridge

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %s: %v", what, a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %s: %v", what, b, err)
	}
	if !reflect.DeepEqual(va, vb) {
		t.Errorf("%s:\n got %s\nwant %s", what, a, b)
	}
}

// Params forwarded from the host's own bytes are the JSON the decoded
// maps give; params that do not scan take the general path.
func TestForwardMembersMatchesMaps(t *testing.T) {
	env := `"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `","` + jsonrpc.MetaClientCapabilities + `":{}`
	cases := []struct {
		params string
		fast   bool
	}{
		{`{"name":"echo","arguments":{"message":"<hi> & bye"}}`, true},
		{`{"_meta":{` + env + `},"name":"echo","arguments":{}}`, true},
		{`{"name":"echo","_meta":{` + env + `,"progressToken":"p"},"arguments":{"a":[1,2]}}`, true},
		{`{"_meta":{"progressToken":7}}`, true},
		{`{"_meta":{}}`, true},
		{`{"_meta":null,"name":"x"}`, true},
		{` { "name" : "echo" , "_meta" : { "k" : 1 } } `, true},
		{`{}`, true},
		{`{"name":"a","name":"b"}`, false},
		{`{"n\u0061me":"echo"}`, false},
		{`{"_meta":{"k\u0031":1},"name":"e"}`, false},
	}
	for _, c := range cases {
		r := parseRequest(&jsonrpc.Message{ID: json.RawMessage("1"), Method: "tools/call", Params: json.RawMessage(c.params)})
		if (r.members != nil) != c.fast {
			t.Errorf("%s: scanned %v, want %v", c.params, r.members != nil, c.fast)
		}
		want, err := r.forwardMap()
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.forwardParams()
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, c.params, got, want)
	}
}

// The spliced resultType and caching hints give what decoding and
// encoding the result gave.
func TestResultSplicesMatchDecoding(t *testing.T) {
	slowType := func(res json.RawMessage) json.RawMessage {
		var top map[string]json.RawMessage
		if json.Unmarshal(res, &top) != nil || top == nil {
			return res
		}
		if _, ok := top["resultType"]; !ok {
			top["resultType"] = json.RawMessage(`"complete"`)
		}
		out, _ := json.Marshal(top)
		return out
	}
	for _, res := range []string{`{"content":[]}`, `{}`, ` { } `, `{"resultType":"input_required","inputRequests":{}}`, `{"a":1,"resultType":"complete"}`} {
		sameJSON(t, "withResultType "+res, withResultType(json.RawMessage(res)), slowType(json.RawMessage(res)))
	}
	for res, want := range map[string]string{
		`{"resultType":"complete","contents":[]}`:                               `{"resultType":"complete","contents":[],"ttlMs":0,"cacheScope":"private"}`,
		`{"resultType":"complete","ttlMs":5}`:                                   `{"resultType":"complete","ttlMs":5,"cacheScope":"private"}`,
		`{"resultType":"complete","cacheScope":"public"}`:                       `{"resultType":"complete","cacheScope":"public","ttlMs":0}`,
		`{"resultType":"complete","cacheScope":"public","ttlMs":1}`:             `{"resultType":"complete","cacheScope":"public","ttlMs":1}`,
		`{"resultType":"input_required","inputRequests":{},"requestState":"s"}`: `{"resultType":"input_required","inputRequests":{},"requestState":"s"}`,
		`{"contents":[]}`: `{"contents":[]}`,
	} {
		sameJSON(t, "withCacheHints "+res, withCacheHints(json.RawMessage(res)), []byte(want))
	}
}

// hasName decides as decoding into a struct with a *string name does.
func TestHasNameMatchesDecoding(t *testing.T) {
	for _, info := range []string{
		`{"name":"h","version":"1"}`, `{"version":"1"}`, `{"name":null}`, `{"name":5}`, `{"Name":"h"}`,
		`{"name":null,"name":"h"}`, `{"name":"h","name":5}`, `{"n\u0061me":"h"}`, `[]`, `"h"`, `{}`,
	} {
		var impl struct {
			Name *string `json:"name"`
		}
		want := isObject(json.RawMessage(info)) && json.Unmarshal([]byte(info), &impl) == nil && impl.Name != nil
		if got := hasName(json.RawMessage(info)); got != want {
			t.Errorf("hasName(%s) = %v, want %v", info, got, want)
		}
	}
}

// Items added from mcpd's bytes are the items decoding and encoding them
// gave, with the same routes and URIs.
func TestAddItemsMatchesDecoding(t *testing.T) {
	items := `[{"name":"echo","description":"<e> & more","inputSchema":{"type":"object"}},` +
		`{"description":"no name"},{"name":"a","name":"b"},{"n\u0061me":"esc"}, {"name":"sp\u00e9cial"} ]`
	for _, aggr := range []bool{false, true} {
		for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
			run := func(add func(*listing) *jsonrpc.Error) (*listing, map[string]string) {
				l := &listing{method: method, aggr: aggr, seen: map[string]string{}, routes: map[string]route{},
					params: map[string]map[string]string{}, uris: map[string]string{}}
				if err := add(l); err != nil {
					t.Fatal(err)
				}
				return l, l.uris
			}
			fast, fastURIs := run(func(l *listing) *jsonrpc.Error { return l.addItems("s", json.RawMessage(items)) })
			slow, slowURIs := run(func(l *listing) *jsonrpc.Error { return l.addDecoded("s", json.RawMessage(items)) })
			res := func(l *listing) []byte {
				out, _ := itemsResult(&hostReq{}, jsonrpc.ListKeys[method], l.items, nil)
				return out
			}
			sameJSON(t, method, res(fast), res(slow))
			if aggr || method != "tools/list" && method != "prompts/list" {
				if !reflect.DeepEqual(fast.routes, slow.routes) || !reflect.DeepEqual(fastURIs, slowURIs) {
					t.Errorf("%s aggregated %v: routes %v uris %v, want %v %v", method, aggr, fast.routes, fastURIs, slow.routes, slowURIs)
				}
			}
		}
	}
}
