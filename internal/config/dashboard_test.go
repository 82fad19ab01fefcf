package config

import (
	"strings"
	"testing"
)

// TestDashboardKey: "dashboard" is a boolean, on when absent.
func TestDashboardKey(t *testing.T) {
	tests := []struct {
		name string
		json string
		want bool
	}{
		{"absent", `{"mcpServers": {}}`, true},
		{"true", `{"dashboard": true, "mcpServers": {}}`, true},
		{"false", `{"dashboard": false, "mcpServers": {}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.json", []byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.DashboardOn(); got != tt.want {
				t.Fatalf("DashboardOn() = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := Parse("c.json", []byte(`{"dashboard": "off"}`)); err == nil || !strings.Contains(err.Error(), `"dashboard"`) {
		t.Errorf(`"dashboard": "off": %v, want an error naming the key`, err)
	}
	if !(*Config)(nil).DashboardOn() {
		t.Error("a nil config turns the dashboard off")
	}
}
