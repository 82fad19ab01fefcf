package config

import (
	"strings"
	"testing"
)

func TestRegistryKey(t *testing.T) {
	cfg, err := Parse("c.json", []byte(`{"registry": "http://127.0.0.1:8080", "mcpServers": {}}`))
	if err != nil || cfg.Registry != "http://127.0.0.1:8080" {
		t.Fatalf("Parse: %v, Registry %q", err, cfg.Registry)
	}
	if _, err := Parse("c.json", []byte(`{"registry": "ftp://x"}`)); err == nil || !strings.Contains(err.Error(), `"registry"`) {
		t.Errorf("ftp registry: %v", err)
	}
}
