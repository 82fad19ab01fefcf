package core

import (
	"encoding/json"
	"testing"
)

// toolCallParams must give exactly the bytes json.Marshal gives for the
// same struct (what CallTool sent before it was written by hand).
func TestToolCallParamsMatchesMarshal(t *testing.T) {
	type params struct {
		Meta           json.RawMessage `json:"_meta,omitempty"`
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}
	cases := []params{
		{Name: "echo"},
		{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)},
		{Meta: json.RawMessage(`{"progressToken":1}`), Name: "t", Arguments: json.RawMessage(`{}`)},
		{Name: "t", InputResponses: json.RawMessage(`{"a":{"x":1}}`), RequestState: "opaque-state"},
		{Name: `quote " backslash \ tab 	 <html> & ünïcödé`, RequestState: "line\nbreak\u2028"},
		{Name: "bad utf8 \xff\xfe", RequestState: "\x00\x1f"},
		{Name: ""},
	}
	for _, c := range cases {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := toolCallParams(c.Meta, c.Name, c.Arguments, c.InputResponses, c.RequestState)
		if err != nil {
			t.Fatalf("%q: %v", c.Name, err)
		}
		if string(got) != string(want) {
			t.Errorf("toolCallParams(%q):\n got %s\nwant %s", c.Name, got, want)
		}
	}
}

func BenchmarkToolCallParams(b *testing.B) {
	args := json.RawMessage(`{"message":"hello from mcpd-bench"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolCallParams(nil, "echo", args, nil, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// implementation writes what json.Marshal writes.
func TestImplementationAsMarshal(t *testing.T) {
	for _, c := range [][2]string{{"h", "1"}, {"", ""}, {"a<b>&c", "é\"\\\n"}, {"Claude Code", "2.0.1"}} {
		got, err := implementation(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}{c[0], c[1]})
		if string(got) != string(want) {
			t.Errorf("implementation(%q, %q) = %s, want %s", c[0], c[1], got, want)
		}
	}
}
