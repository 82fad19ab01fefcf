package config

import (
	"strings"
	"testing"
)

func TestShareKeys(t *testing.T) {
	cases := []struct {
		name, server, wantErr string
		share                 string
		max                   int
	}{
		{"default", `{"command": "x"}`, "", "", 0},
		{"client", `{"command": "x", "share": "client", "maxInstances": 3}`, "", ShareClient, 3},
		{"root", `{"command": "x", "share": "root"}`, "", ShareRoot, 0},
		{"bad value", `{"command": "x", "share": "team"}`, `share: invalid value "team"`, ShareGlobal, 0},
		{"bad cap", `{"command": "x", "share": "client", "maxInstances": 0}`, `maxInstances: invalid value 0`, ShareClient, 0},
		{"cap without share", `{"command": "x", "maxInstances": 2}`, `applies only with "share"`, "", 2},
		{"remote", `{"url": "https://example.invalid/mcp", "share": "client"}`, "a remote server (url) is one connection", ShareClient, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("/tmp/config.json", []byte(`{"mcpServers": {"s": `+c.server+`}}`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			s := cfg.Servers[0]
			if c.wantErr == "" && s.Invalid != "" || c.wantErr != "" && !strings.Contains(s.Invalid, c.wantErr) {
				t.Errorf("Invalid = %q, want %q", s.Invalid, c.wantErr)
			}
			if s.Share != c.share || s.MaxInstances != c.max {
				t.Errorf("share %q max %d, want %q %d", s.Share, s.MaxInstances, c.share, c.max)
			}
		})
	}
}
