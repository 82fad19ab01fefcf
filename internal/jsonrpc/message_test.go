package jsonrpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// messageCases are lines a host may send, valid or not.
var messageCases = append([]string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":5,"id":1,"method":"ping"}`,
	`{"jsonrpc":null,"id":1,"method":"ping"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
	`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"}garbage`,
	`[1,2]`,
	`"str"`,
	``,
	`{"jsonrpc":"2.0","id":[1],"method":{"a":1}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}`,
}, envelopeCases...)

// DecodeMessage must give what json.Unmarshal into a Message gives, for
// any input.
func TestDecodeMessageMatchesUnmarshal(t *testing.T) {
	for _, c := range messageCases {
		checkMessage(t, []byte(c))
	}
	if _, _, ok := scanEnvelope([]byte(messageCases[0])); !ok {
		t.Errorf("%s: not scanned, want the fast path", messageCases[0])
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, c := range messageCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, msg []byte) { checkMessage(t, msg) })
}

func checkMessage(t *testing.T, line []byte) {
	t.Helper()
	var want Message
	wantErr := json.Unmarshal(line, &want)
	got, err := DecodeMessage(line)
	if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%s: error %v, json.Unmarshal: %v", line, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", line, got, want)
	}
}

// AppendMessage writes what json.Marshal writes, but raw values as they
// are: the same bytes for compact values without HTML characters, the
// same JSON otherwise, always one line.
func TestAppendMessage(t *testing.T) {
	cases := []Message{
		{JSONRPC: Version, ID: json.RawMessage(`7`), Result: json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)},
		{JSONRPC: Version, Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"p","progress":1}`)},
		{JSONRPC: Version, ID: json.RawMessage(`null`), Error: &Error{Code: CodeParseError, Message: "parse <error> & \"more\"", Data: json.RawMessage(`{"a":1}`)}},
		{JSONRPC: Version, ID: json.RawMessage(`"mcpd-1"`), Method: "roots/list"},
		{},
	}
	for _, m := range cases {
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendMessage([]byte("keep"), &m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[4:], want) || string(got[:4]) != "keep" {
			t.Errorf("AppendMessage = %s, json.Marshal = %s", got, want)
		}
	}
	// A raw value with line breaks is compacted; one with HTML characters
	// is kept byte for byte (json.Marshal would escape them).
	m := Message{JSONRPC: Version, ID: json.RawMessage("1"), Result: json.RawMessage("{\n  \"a\": \"<b>\"\n}")}
	got, err := AppendMessage(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{"a":"<b>"}}`; string(got) != want {
		t.Errorf("AppendMessage = %s, want %s", got, want)
	}
	m.Result = json.RawMessage("{\n")
	if _, err := AppendMessage(nil, &m); err == nil {
		t.Error("AppendMessage of invalid JSON with a line break: no error")
	}
}

// Members splits an object as json.Unmarshal into a map would key it.
func TestMembers(t *testing.T) {
	ms, ok := Members([]byte(` { "a" : 1 , "b":{"c":[1,"}"]}, "d":"x" } `))
	if !ok || len(ms) != 3 {
		t.Fatalf("Members = %v, %v", ms, ok)
	}
	want := []Member{
		{Key: "a", Value: []byte("1"), Span: []byte(`"a" : 1`)},
		{Key: "b", Value: []byte(`{"c":[1,"}"]}`), Span: []byte(`"b":{"c":[1,"}"]}`)},
		{Key: "d", Value: []byte(`"x"`), Span: []byte(`"d":"x"`)},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("Members = %q, want %q", ms, want)
	}
	for _, obj := range []string{`[1]`, `{"a\u0062":1}`, `{"é":1}`, `"s"`, ``} {
		if _, ok := Members([]byte(obj)); ok {
			t.Errorf("Members(%s) ok, want the general path", obj)
		}
	}
	if ms, ok := Members([]byte(`{}`)); !ok || len(ms) != 0 {
		t.Errorf("Members({}) = %v, %v", ms, ok)
	}
}

func TestIsObjectAndPlainText(t *testing.T) {
	for raw, want := range map[string]bool{`{}`: true, ` {"a":1}`: true, `{`: false, `[]`: false, `null`: false, ``: false} {
		if got := IsObject([]byte(raw)); got != want {
			t.Errorf("IsObject(%q) = %v, want %v", raw, got, want)
		}
	}
	if s, ok := PlainText([]byte(`"2026-07-28"`)); !ok || s != "2026-07-28" {
		t.Errorf("PlainText = %q, %v", s, ok)
	}
	for _, raw := range []string{`"a\"b"`, `"é"`, `5`, `"`} {
		if _, ok := PlainText([]byte(raw)); ok {
			t.Errorf("PlainText(%s) ok, want not plain", raw)
		}
	}
}
