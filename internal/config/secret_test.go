package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpandSecrets(t *testing.T) {
	env := map[string]string{"A": "alpha", "REF": "${secret:X}", "D": "$"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, wantErr string
		names             []string
	}{
		{in: "${secret:TOKEN}", want: "${secret:TOKEN}", names: []string{"TOKEN"}},
		{in: "Bearer ${secret:gh.tok-1} ${A}", want: "Bearer ${secret:gh.tok-1} alpha", names: []string{"gh.tok-1"}},
		{in: "${secret:A}${secret:B}", want: "${secret:A}${secret:B}", names: []string{"A", "B"}},
		{in: "$${A} ${secret:B}", want: "${A} ${secret:B}", names: []string{"B"}},
		{in: "${D}${secret:B}", want: "$${secret:B}", names: []string{"B"}},
		{in: "${secret:}", wantErr: `invalid secret reference "${secret:}": a name is 1 to 128 of A-Z a-z 0-9 _ . -`},
		{in: "${secret:a b}", wantErr: `invalid secret reference "${secret:a b}": a name is 1 to 128 of A-Z a-z 0-9 _ . -`},
		{in: "$${secret:X}", wantErr: `the value would hold a literal "${secret:", which mcpd would read as a secret reference`},
		{in: "${REF} ${secret:Y}", wantErr: `the value would hold a literal "${secret:", which mcpd would read as a secret reference`},
		{in: "${REF}", wantErr: `the value would hold a literal "${secret:", which mcpd would read as a secret reference`},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, lookup, true)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("expand(%q) = %q, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if diff := cmp.Diff(tt.names, SecretNames(got)); diff != "" {
			t.Errorf("SecretNames(%q) (-want +got):\n%s", got, diff)
		}
	}
	if _, err := expand("${secret:X}", lookup, false); err == nil || err.Error() != "${secret:X}: secrets are allowed only in args, env and headers" {
		t.Errorf("secret in a key without secrets: %v", err)
	}
}

func TestResolveSecrets(t *testing.T) {
	vals := map[string]string{"A": "a-val", "B": "${secret:A}"}
	get := func(n string) (string, error) {
		if v, ok := vals[n]; ok {
			return v, nil
		}
		return "", errors.New("secret " + n + " not found")
	}
	for in, want := range map[string]string{
		"plain ${x}":                   "plain ${x}",
		"${secret:A}":                  "a-val",
		"x=${secret:A};y=${secret:B}!": "x=a-val;y=${secret:A}!", // values are not expanded again
		"$${secret:A}":                 "$a-val",
	} {
		if got, err := ResolveSecrets(in, get); err != nil || got != want {
			t.Errorf("ResolveSecrets(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ResolveSecrets("${secret:NOPE}", get); err == nil || err.Error() != "secret NOPE not found" {
		t.Errorf("missing: %v", err)
	}
}

// TestParseSecrets: args, env and headers keep their references for the
// start; command, cwd and url refuse them as a problem of the server.
func TestParseSecrets(t *testing.T) {
	cfg, err := Parse("c.json", []byte(`{"mcpServers": {
		"s": {"command": "srv", "args": ["--token=${secret:T}"], "env": {"TOKEN": "${secret:T}"}},
		"r": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${secret:R}"}},
		"bad": {"command": "${secret:C}"},
		"off": {"command": "srv", "disabled": true, "env": {"X": "${secret:bad name}"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Server{}
	for _, s := range cfg.Servers {
		by[s.Name] = s
	}
	if s := by["s"]; s.Invalid != "" || s.Args[0] != "--token=${secret:T}" || s.Env["TOKEN"] != "${secret:T}" {
		t.Errorf("s = %+v", s)
	}
	if r := by["r"]; r.Invalid != "" || r.Remote.Headers["Authorization"] != "Bearer ${secret:R}" {
		t.Errorf("r = %+v", r)
	}
	if inv := by["bad"].Invalid; !strings.Contains(inv, "command: ${secret:C}: secrets are allowed only in args, env and headers") {
		t.Errorf("bad.Invalid = %q", inv)
	}
	if inv := by["off"].Invalid; !strings.Contains(inv, "invalid secret reference") {
		t.Errorf("off.Invalid = %q", inv)
	}
}
