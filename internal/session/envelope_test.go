package session

import (
	"encoding/json"
	"reflect"
	"testing"
)

var envelopeCases = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":"a-1","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","progress":1}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope","data":{"x":[1,2]}}}`,
	`{"jsonrpc":"2.0","id":7,"error":null,"result":null}`,
	` { "id" : 3 , "result" : [ 1 , { "a" : "}]\"{" } ] , "x" : true } `,
	`{"id":1,"id":2,"result":{"a":1},"result":"b"}`,
	`{"ID":1,"Result":{}}`,
	`{"\u0069d":1,"result":{}}`,
	`{"id":1,"method":"caf\u00e9"}`,
	`{"id":1,"method":"café"}`,
	`{"id":1,"method":null}`,
	`{"id":1,"method":5}`,
	`{"id":null,"result":{}}`,
	`{"id":-1.5e3,"result":false}`,
	`{"paramſ":{"a":1},"method":"m"}`,
	`{}`,
	`{"result":"\\"}`,
	`{"id":{"nested":[1,{"id":2}]},"result":{}}`,
	`{"method":"a\"b"}`,
}

func scanned(msg string) bool {
	_, ok := scanEnvelope([]byte(msg))
	return ok
}

// decodeEnvelope must give what json.Unmarshal gives, for every valid JSON
// object (the transport passes on nothing else).
func TestDecodeEnvelopeMatchesUnmarshal(t *testing.T) {
	for _, c := range envelopeCases {
		checkEnvelope(t, []byte(c))
	}
	// The usual messages take the fast path.
	for _, i := range []int{0, 1, 2, 4, 5, 6} {
		if c := envelopeCases[i]; !scanned(c) {
			t.Errorf("%s: not scanned, want the fast path", c)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, c := range envelopeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !json.Valid(msg) {
			return
		}
		checkEnvelope(t, msg)
	})
}

func checkEnvelope(t *testing.T, msg []byte) {
	t.Helper()
	var want envelope
	wantErr := json.Unmarshal(msg, &want)
	got, err := decodeEnvelope(msg)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, json.Unmarshal: %v", msg, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Errorf("%s:\n got %+v\nwant %+v", msg, norm(got), norm(want))
	}
}

// norm makes nil and empty raw members comparable as strings.
func norm(e envelope) map[string]any {
	m := map[string]any{
		"id": string(e.ID), "method": e.Method, "params": string(e.Params), "result": string(e.Result),
		"idNil": e.ID == nil, "paramsNil": e.Params == nil, "resultNil": e.Result == nil,
	}
	if e.Error != nil {
		m["error"] = *e.Error
	}
	return m
}

func BenchmarkDecodeEnvelope(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"hello from mcpd-bench"}]}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEnvelope(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env envelope
			if err := json.Unmarshal(msg, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestResponseIDPrefix(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		want   string // "" means not found
	}{
		{"id first", `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"xxxx`, `5`},
		{"whole small response", `{"id":3,"result":{}}`, `3`},
		{"error response", ` { "id" : 7 , "error" : {"code":-32000,"message":"xxx`, `7`},
		{"string id", `{"id":"a-1","result":{"x`, `"a-1"`},
		{"object id with braces in a string", `{"id":{"a":"}"},"result":[`, `{"a":"}"}`},
		{"id after a whole result", `{"jsonrpc":"2.0","result":{"a":1},"id":9,"pad":"xxx`, `9`},
		{"result before id", `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"xxx`, ``},
		{"id nested in result before id", `{"jsonrpc":"2.0","result":{"id":3,"text":"xxx`, ``},
		{"id nested in params of a notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"id":12,"data":"xxx`, ``},
		{"id nested in params before method", `{"jsonrpc":"2.0","params":{"id":12,"data":"xxx`, ``},
		{"request of the child", `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"messages":[`, ``},
		{"request with method after params", `{"jsonrpc":"2.0","id":4,"params":{"x":"yyy`, ``},
		{"progress notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","x":"`, ``},
		{"id without result", `{"jsonrpc":"2.0","id":4}`, ``},
		{"id number cut off", `{"jsonrpc":"2.0","id":12`, ``},
		{"id string cut off", `{"jsonrpc":"2.0","id":"ab`, ``},
		{"key cut off", `{"jsonrpc":"2.0","i`, ``},
		{"second id cut off", `{"id":1,"result":{},"id":2`, ``},
		{"second id replaces the first", `{"id":1,"id":2,"result":{"x`, `2`},
		{"id in another case", `{"ID":5,"result":{"xx`, ``},
		{"result in another case", `{"id":5,"Result":{"xx`, ``},
		{"escaped key", `{"\u0069d":5,"result":{"xx`, ``},
		{"not an object", `[{"id":5,"result":{`, ``},
		{"banner", `hello "id":5,"result"`, ``},
		{"empty", ``, ``},
		{"whitespace", "  \t", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := responseIDPrefix([]byte(tt.prefix))
			got := ""
			if ok {
				got = string(id)
			}
			if got != tt.want {
				t.Errorf("responseIDPrefix(%q) = %q, %v; want %q", tt.prefix, id, ok, tt.want)
			}
		})
	}
}
