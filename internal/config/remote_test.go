package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRemote(t *testing.T) {
	t.Setenv("MCPD_TEST_TOKEN", "s3cret")
	data := `{"mcpServers": {
		"api": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${MCPD_TEST_TOKEN}", "X-Org": "o"},
		        "requestTimeout": "5s", "cache": "never", "idleTimeout": "1m", "protocol": "legacy"},
		"old": {"url": "http://127.0.0.1:9/sse", "type": "sse", "disabled": true, "headers": {"K": "${MCPD_TEST_UNSET_X}"}},
		"gh":  {"type": "http", "url": "https://gh.example/mcp",
		        "oauth": {"clientId": "abc", "clientSecret": "${MCPD_TEST_TOKEN}", "scopes": ["repo", "read:org"], "redirectPort": 53682}},
		"local": {"type": "stdio", "command": "/bin/true"}
	}}`
	cfg, err := Parse("config.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Problems) > 0 {
		t.Fatalf("problems: %v", cfg.Problems)
	}
	by := map[string]Server{}
	for _, s := range cfg.Servers {
		by[s.Name] = s
	}
	want := &Remote{URL: "https://api.example/mcp", Type: TypeHTTP,
		Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Org": "o"}}
	if got := by["api"].Remote; !reflect.DeepEqual(got, want) {
		t.Errorf("api: %+v, want %+v", got, want)
	}
	if s := by["api"]; s.Protocol != "legacy" || s.Cache != "never" || s.RequestTimeout.String() != "5s" || s.IdleTimeout.String() != "1m0s" {
		t.Errorf("api settings: %+v", s)
	}
	if r := by["old"].Remote; r == nil || r.Type != TypeSSE || r.Headers["K"] != "${MCPD_TEST_UNSET_X}" {
		t.Errorf("old (disabled: not expanded): %+v", r)
	}
	wantOAuth := &OAuth{ClientID: "abc", ClientSecret: "s3cret", Scopes: []string{"repo", "read:org"}, RedirectPort: 53682}
	if o := by["gh"].Remote.OAuth; !reflect.DeepEqual(o, wantOAuth) {
		t.Errorf("gh oauth: %+v", o)
	}
	if by["local"].Remote != nil || by["local"].Command != "/bin/true" {
		t.Errorf("local: %+v", by["local"])
	}
}

// A problem of a header never shows its value.
func TestRemoteHeaderValueNotInErrors(t *testing.T) {
	t.Setenv("MCPD_TEST_TOKEN", "s3cret\nInjected: x")
	cfg, err := Parse("config.json", []byte(`{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"Authorization": "${MCPD_TEST_TOKEN}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Problems) != 1 || strings.Contains(cfg.Problems[0].Error(), "s3cret") {
		t.Fatalf("problems: %v", cfg.Problems)
	}
}
