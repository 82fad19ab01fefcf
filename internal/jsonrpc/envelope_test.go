package jsonrpc

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
	_, _, ok := scanEnvelope([]byte(msg))
	return ok
}

// DecodeEnvelope must give what json.Unmarshal gives, for every valid JSON
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
	var want Envelope
	wantErr := json.Unmarshal(msg, &want)
	got, err := DecodeEnvelope(msg)
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
func norm(e Envelope) map[string]any {
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
			if _, err := DecodeEnvelope(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env Envelope
			if err := json.Unmarshal(msg, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
