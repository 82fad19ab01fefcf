package supervisor

import (
	"encoding/json"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// What mcpd declares to a legacy child: what it routes end to end (roots,
// sampling, elicitation form and url, the MCP Apps extension), changed by
// the sampling/elicitation switches and the clientCapabilities key.
func TestDeclaredCapabilities(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"default", Spec{}, `{"elicitation":{"form":{},"url":{}},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}},"roots":{"listChanged":true},"sampling":{}}`},
		{"switches", Spec{Roots: &off, Sampling: &off, Elicitation: &off}, `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`},
		{"add and remove", Spec{ClientCapabilities: &config.ClientCaps{
			Add:    json.RawMessage(`{"extensions":{"com.example/widgets":{"v":1}},"sampling":{"tools":{}}}`),
			Remove: []string{"roots", "elicitation.url", "io.modelcontextprotocol/ui"},
		}}, `{"elicitation":{"form":{}},"extensions":{"com.example/widgets":{"v":1}},"sampling":{"tools":{}}}`},
		{"no extensions left", Spec{ClientCapabilities: &config.ClientCaps{Remove: []string{"io.modelcontextprotocol/ui", "sampling", "roots", "elicitation"}}}, `{}`},
	} {
		got, _ := json.Marshal(declaredCapabilities(tc.spec))
		if string(got) != tc.want {
			t.Errorf("%s: declared %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The declaration is made once per session: a change of clientCapabilities
// restarts the server.
func TestClientCapabilitiesChangeRestarts(t *testing.T) {
	a := Spec{Name: "s", Command: "/bin/true"}
	b := a
	b.ClientCapabilities = &config.ClientCaps{Remove: []string{"sampling"}}
	if got := CompareSpecs(a, b); got != SpecIdentity {
		t.Errorf("CompareSpecs = %v, want SpecIdentity", got)
	}
	c := b
	c.ClientCapabilities = &config.ClientCaps{Remove: []string{"sampling"}}
	if got := CompareSpecs(b, c); got != SpecUnchanged {
		t.Errorf("an equal declaration: CompareSpecs = %v, want SpecUnchanged", got)
	}
}
