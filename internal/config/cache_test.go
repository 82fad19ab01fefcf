package config

import (
	"strings"
	"testing"
)

func TestCacheKey(t *testing.T) {
	tests := []struct {
		value string // JSON value of "cache"; "" means the key is absent
		want  string
		err   string
	}{
		{value: "", want: ""},
		{value: `"never"`, want: "never"},
		{value: `"always"`, want: "always"},
		{value: `"90s"`, want: "1m30s"},
		{value: `1500`, want: "1.5s"},
		{value: `"0s"`, err: "must be positive"},
		{value: `"sometimes"`, err: `"never" or "always"`},
		{value: `true`, err: `"never" or "always", got boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			extra := ""
			if tt.value != "" {
				extra = `, "cache": ` + tt.value
			}
			cfg, err := parseStrict("/etc/mcpd.json", []byte(`{"mcpServers": {"s": {"command": "x"`+extra+`}}}`))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), `key "cache"`) {
					t.Fatalf("err = %v, want one about %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers[0].Cache; got != tt.want {
				t.Fatalf("Cache = %q, want %q", got, tt.want)
			}
		})
	}
}
