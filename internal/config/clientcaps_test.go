package config

import (
	"strings"
	"testing"
)

func TestClientCapabilitiesKey(t *testing.T) {
	ok := `{"mcpServers":{"s":{"command":"/bin/true","clientCapabilities":{
		"add":{"extensions":{"com.example/widgets":{"v":1}},"experimental":{"x":{}}},
		"remove":["sampling","elicitation.url","io.modelcontextprotocol/ui"]}}}}`
	cfg, err := Parse("c.json", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if s.Invalid != "" || s.ClientCapabilities == nil {
		t.Fatalf("server %+v", s)
	}
	if got := string(s.ClientCapabilities.Add); got != `{"extensions":{"com.example/widgets":{"v":1}},"experimental":{"x":{}}}` {
		t.Errorf("add = %s", got)
	}
	if got := strings.Join(s.ClientCapabilities.Remove, ","); got != "sampling,elicitation.url,io.modelcontextprotocol/ui" {
		t.Errorf("remove = %s", got)
	}
	for _, tc := range []struct{ value, want string }{
		{`true`, "want an object"},
		{`{"ad":{}}`, `unknown key "ad"`},
		{`{"add":{"samplng":{}}}`, `unknown client capability "samplng"`},
		{`{"add":{"sampling":true}}`, "a capability is a JSON object"},
		{`{"add":{"extensions":{"ui":{}}}}`, `"ui" is not an extension id`},
		{`{"add":{"extensions":{"io.modelcontextprotocol/ui":[]}}}`, "an extension's settings are a JSON object"},
		{`{"remove":"sampling"}`, "want an array"},
		{`{"remove":[1]}`, "want capability names"},
		{`{"remove":["elicitation.url.x"]}`, `unknown client capability "elicitation.url.x"`},
		{`{"remove":["rootz"]}`, `unknown client capability "rootz"`},
		{`{"remove":["/ui"]}`, `"/ui" is not an extension id`},
	} {
		cfg, err := Parse("c.json", []byte(`{"mcpServers":{"s":{"command":"/bin/true","clientCapabilities":`+tc.value+`}}}`))
		if err != nil {
			t.Fatalf("%s: the file failed: %v", tc.value, err)
		}
		if inv := cfg.Servers[0].Invalid; !strings.Contains(inv, tc.want) || !strings.Contains(inv, "clientCapabilities") {
			t.Errorf("%s: invalid = %q, want it to name clientCapabilities and say %q", tc.value, inv, tc.want)
		}
	}
}
