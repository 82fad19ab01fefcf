package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// manyServers is a config file of n servers shaped as the scale benchmark's
// (bench): one executable command, a "--name" argument each.
func manyServers(b *testing.B, n int) (path string, data []byte) {
	b.Helper()
	dir := b.TempDir()
	cmd := filepath.Join(dir, "server")
	if err := os.WriteFile(cmd, []byte("#!/bin/sh\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	servers := map[string]any{}
	for i := range n {
		name := fmt.Sprintf("demo%03d", i)
		servers[name] = map[string]any{"command": cmd, "args": []string{"--name", name}}
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "config.json"), data
}

// BenchmarkParse500 is the start-up's config work at 500 servers: parse,
// validate and check every command.
func BenchmarkParse500(b *testing.B) {
	path, data := manyServers(b, 500)
	b.ReportAllocs()
	for b.Loop() {
		c, err := Parse(path, data)
		if err != nil {
			b.Fatal(err)
		}
		c.CheckCommands()
		if len(c.Servers) != 500 || len(c.Problems) != 0 {
			b.Fatalf("%d servers, problems %v", len(c.Servers), c.Problems)
		}
	}
}
