package config

import (
	"strings"
	"testing"
	"time"
)

// TestDurationRange: duration keys beyond what a time.Duration holds, as
// milliseconds or as strings, are refused as too large (or, negative, as
// not positive) rather than wrapping or reported as malformed; the
// largest values are accepted.
func TestDurationRange(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
		err   string // "" when accepted
	}{
		{value: `9223372036854`, want: time.Duration(maxDurationMs) * time.Millisecond},
		{value: `"2562047h47m16.854775807s"`, want: maxDuration},
		{value: `9223372036855`, err: "invalid duration 9223372036855: too large (at most 9223372036854 ms)"},
		{value: `288230376151711745`, err: "invalid duration 288230376151711745: too large"},
		{value: `99999999999999999999`, err: "invalid duration 99999999999999999999: too large (at most 9223372036854 ms)"},
		{value: `-99999999999999999999`, err: "invalid duration -99999999999999999999: must be positive"},
		{value: `"2562048h"`, err: `invalid duration "2562048h": too large (at most 2562047h47m16.854775807s)`},
		{value: `"99999999999999999999ms"`, err: `invalid duration "99999999999999999999ms": too large`},
		{value: `"-99999999999h"`, err: `invalid duration "-99999999999h": must be positive`},
		{value: `"soon"`, err: `invalid duration "soon"`},
		{value: `1e30`, err: "invalid duration 1e30: a number is a whole count of milliseconds"},
	}
	for _, tt := range tests {
		for _, key := range []string{"requestTimeout", "shutdownGrace", "discoverTimeout", "idleTimeout"} {
			c, err := parseStrict("/cfg/config.json", []byte(`{"mcpServers":{"a":{"command":"x","`+key+`":`+tt.value+`}}}`))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), `key "`+key+`": `+tt.err) {
					t.Errorf("%s %s: error %v, want %q", key, tt.value, err, tt.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", key, tt.value, err)
				continue
			}
			s := c.Servers[0]
			got := map[string]time.Duration{"requestTimeout": s.RequestTimeout, "shutdownGrace": s.ShutdownGrace,
				"discoverTimeout": s.DiscoverTimeout, "idleTimeout": s.IdleTimeout}[key]
			if got != tt.want {
				t.Errorf("%s %s = %v, want %v", key, tt.value, got, tt.want)
			}
		}
	}
}
