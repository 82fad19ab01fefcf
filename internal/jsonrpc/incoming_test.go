package jsonrpc

import (
	"encoding/json"
	"testing"
)

func TestCheckIncoming(t *testing.T) {
	for _, tt := range []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, true},
		{`{"jsonrpc":"2.0","id":"a","method":"ping"}`, true},
		{`{"jsonrpc":"2.0","id":-3,"method":"ping"}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, false},
		{`{"id":1,"method":"ping"}`, false},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, false},
		{`{"jsonrpc":"2.0","method":""}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, false},
		{`{"jsonrpc":"2.0"}`, false},
	} {
		m, err := DecodeMessage([]byte(tt.line))
		if err != nil {
			t.Fatalf("%s: %v", tt.line, err)
		}
		if e := CheckIncoming(&m, []byte(tt.line)); (e == nil) != tt.ok || e != nil && e.Code != CodeInvalidRequest {
			t.Errorf("CheckIncoming(%s) = %v, want ok %v", tt.line, e, tt.ok)
		}
	}
	if id := AnswerID(&Message{ID: json.RawMessage("true")}); string(id) != "null" {
		t.Errorf("AnswerID of true = %s", id)
	}
	if !IsBatch([]byte(` [{"a":1}]`)) || IsBatch([]byte(`[`)) || IsBatch([]byte(`{}`)) {
		t.Error("IsBatch")
	}
}
