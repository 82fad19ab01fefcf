package config

import (
	"strings"
	"testing"
)

func TestForwardKeys(t *testing.T) {
	tests := []struct {
		extra                       string
		roots, sampling, elicitaion string // "nil", "true", "false"
		err                         string
	}{
		{extra: "", roots: "nil", sampling: "nil", elicitaion: "nil"},
		{extra: `, "roots": false, "sampling": true`, roots: "false", sampling: "true", elicitaion: "nil"},
		{extra: `, "elicitation": false`, roots: "nil", sampling: "nil", elicitaion: "false"},
		{extra: `, "sampling": "yes"`, err: `key "sampling": want a boolean, got string`},
	}
	show := func(b *bool) string {
		if b == nil {
			return "nil"
		}
		if *b {
			return "true"
		}
		return "false"
	}
	for _, tt := range tests {
		t.Run(tt.extra, func(t *testing.T) {
			cfg, err := parseStrict("/etc/mcpd.json", []byte(`{"mcpServers": {"s": {"command": "x"`+tt.extra+`}}}`))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Servers[0]
			if got := [3]string{show(s.Roots), show(s.Sampling), show(s.Elicitation)}; got != [3]string{tt.roots, tt.sampling, tt.elicitaion} {
				t.Errorf("roots, sampling, elicitation = %v", got)
			}
		})
	}
}
