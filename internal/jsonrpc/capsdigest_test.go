package jsonrpc

import "testing"

// Declarations that differ only in member order or spacing share a
// digest; none, null and {} are one; any other difference is another.
func TestCapsDigest(t *testing.T) {
	ui := `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}},"elicitation":{"form":{}}}`
	uiReordered := `{ "elicitation": {"form":{}}, "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}} }`
	if CapsDigest([]byte(ui)) != CapsDigest([]byte(uiReordered)) {
		t.Error("member order or spacing changed the digest")
	}
	for _, none := range []string{"", "null", "{}", " { } "} {
		if got := CapsDigest([]byte(none)); got != "none" {
			t.Errorf("CapsDigest(%q) = %q, want none", none, got)
		}
	}
	others := []string{
		`{}`,
		`{"elicitation":{"form":{}}}`,
		`{"elicitation":{"form":{},"url":{}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{}}}`,
		ui,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}},"elicitation":{"form":{}}}`,
	}
	seen := map[string]string{}
	for _, c := range others {
		d := CapsDigest([]byte(c))
		if prev, ok := seen[d]; ok {
			t.Errorf("%s and %s share the digest %s", prev, c, d)
		}
		seen[d] = c
	}
}
