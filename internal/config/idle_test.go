package config

import (
	"strings"
	"testing"
	"time"
)

func TestIdleTimeoutKey(t *testing.T) {
	tests := []struct {
		value string // JSON value of "idleTimeout"; "" means the key is absent
		want  time.Duration
		err   string
	}{
		{value: "", want: 0},
		{value: `"10m"`, want: 10 * time.Minute},
		{value: `90000`, want: 90 * time.Second},
		{value: `0`, want: 0},
		{value: `"0"`, want: 0},
		{value: `"0s"`, want: 0},
		{value: `"-1s"`, err: "must be positive"},
		{value: `-5`, err: "must be positive"},
		{value: `1.5`, err: "whole count of milliseconds"},
		{value: `"soon"`, err: `invalid duration "soon"`},
		{value: `true`, err: "want a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			extra := ""
			if tt.value != "" {
				extra = `, "idleTimeout": ` + tt.value
			}
			cfg, err := parseStrict("/etc/mcpd.json", []byte(`{"mcpServers": {"s": {"command": "x"`+extra+`}}}`))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), `key "idleTimeout"`) {
					t.Fatalf("err = %v, want one about %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers[0].IdleTimeout; got != tt.want {
				t.Fatalf("IdleTimeout = %s, want %s", got, tt.want)
			}
		})
	}
}
