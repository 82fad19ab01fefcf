package config

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decoderMembers splits a JSON object with encoding/json's Decoder, the
// reference objectMembers must agree with.
func decoderMembers(t testing.TB, raw []byte) []member {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, member{tok.(string), v})
	}
	return out
}

// scanSeeds are valid JSON objects with what a scanner can get wrong:
// escapes (quotes, backslashes, \u), braces inside strings, nesting,
// every kind of value, odd whitespace, invalid UTF-8, duplicate keys.
var scanSeeds = []string{
	`{}`,
	` { } `,
	`{"a":1}`,
	"{\r\n\t\"a\" :\t-1.5e+3 ,\n\"b\": true,\"c\":false , \"d\":null}",
	`{"k\"q":"v\\","\u00e9\ud83d\ude00":"x\u0041","":""}`,
	`{"s":"}{][,:\"","o":{"n":[1,{"x":"]"}],"e":{}},"a":[],"z":[[],[[]]]}`,
	"{\"bad\xff\":\"v\xfe\",\"b\":\"ok\"}",
	`{"dup":1,"dup":2}`,
	`{"mcpServers":{"a":{"command":"npx","args":["-y","@x/y","${HOME}"],"env":{"K":"V"}}}}`,
}

func TestObjectMembersAgreeWithDecoder(t *testing.T) {
	for _, seed := range scanSeeds {
		checkMembers(t, []byte(seed))
	}
}

func TestArrayElementsAgreeWithDecoder(t *testing.T) {
	for _, in := range []string{`[]`, ` [ ] `, `[1]`, `[ "a" , {"b":[1,"]"]}, [], null, true, -0.5 ]`, `["\"]", "\\"]`} {
		got, err := arrayElements([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, want %d", in, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: element %d = %s, want %s", in, i, got[i], want[i])
			}
		}
	}
}

func TestScannerRefusesWhatIsNotItsKind(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a:1}`} {
		if m, err := objectMembers([]byte(in)); err == nil {
			t.Errorf("objectMembers(%q) = %v, want an error", in, m)
		}
	}
	for _, in := range []string{``, `{}`, `[`, `[1,]`, `[1 2]`, `["a]`} {
		if e, err := arrayElements([]byte(in)); err == nil {
			t.Errorf("arrayElements(%q) = %q, want an error", in, e)
		}
	}
}

// FuzzObjectMembers: on every valid JSON object, objectMembers returns what
// the Decoder does, and it never panics on anything.
func FuzzObjectMembers(f *testing.F) {
	for _, seed := range scanSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := objectMembers(data)
		if !json.Valid(data) || Kind(data) != "object" {
			return
		}
		if err != nil {
			t.Fatalf("objectMembers(%q): %v", data, err)
		}
		checkMembersAgainst(t, data, got)
	})
}

func checkMembers(t *testing.T, raw []byte) {
	t.Helper()
	got, err := objectMembers(raw)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	checkMembersAgainst(t, raw, got)
}

func checkMembersAgainst(t *testing.T, raw []byte, got []member) {
	t.Helper()
	want := decoderMembers(t, raw)
	if len(got) != len(want) {
		t.Fatalf("%q: %d members, want %d", raw, len(got), len(want))
	}
	for i := range got {
		if got[i].key != want[i].key || !bytes.Equal(got[i].val, want[i].val) {
			t.Errorf("%q: member %d = %q: %s, want %q: %s", raw, i, got[i].key, got[i].val, want[i].key, want[i].val)
		}
	}
}
