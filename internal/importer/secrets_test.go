package importer

import (
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/secrets"
)

func TestIsSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"GITHUB_TOKEN": true, "github_pat": true, "API_KEY": true, "OPENAI_APIKEY": true, "DB_PASSWORD": true,
		"client_secret": true, "Authorization": true, "x-api-key": true, "X-Auth-Token": true,
		"LOG_LEVEL": false, "KEYBOARD": false, "PATH": false, "HOME": false, "Content-Type": false,
	} {
		if got := isSecretKey(k); got != want {
			t.Errorf("isSecretKey(%q) = %v, want %v", k, got, want)
		}
	}
	if s, c := authScheme("Authorization", "Bearer abc"); s != "Bearer " || c != "abc" {
		t.Errorf("authScheme = %q, %q", s, c)
	}
	for v, want := range map[string]bool{"abc": true, "Bearer abc": true, "${A}": false, "Bearer ${A}": false, "$DOCS_KEY": false, "Bearer $A": false, "a$b": true, " ": false} {
		if got := isLiteral("Authorization", v); got != want {
			t.Errorf("isLiteral(%q) = %v, want %v", v, got, want)
		}
	}
	if s, c := authScheme("Authorization", "abc"); s != "" || c != "abc" {
		t.Errorf("authScheme without a scheme = %q, %q", s, c)
	}
	if got := secretBaseName("my.server", "X-API Key"); got != "my.server_X-API_Key" {
		t.Errorf("secretBaseName = %q", got)
	}
	if err := secrets.CheckName(secretBaseName(strings.Repeat("s", 100), strings.Repeat("k", 100)) + "_99"); err != nil {
		t.Error(err)
	}
}
