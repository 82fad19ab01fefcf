package config

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// examples/config.full.json shows every key of the key table, each in its
// object, and every server in it is usable.
func TestFullExampleHasEveryKey(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "config.full.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{}
	note := func(in string, obj json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) != nil {
			return
		}
		if seen[in] == nil {
			seen[in] = map[string]bool{}
		}
		for k := range m {
			seen[in][k] = true
		}
	}
	note(InTop, data)
	note(InAudit, top["audit"])
	for _, group := range []string{"mcpServers", "servers"} {
		var servers map[string]json.RawMessage
		_ = json.Unmarshal(top[group], &servers)
		for _, s := range servers {
			note(InServer, s)
			var fields map[string]json.RawMessage
			_ = json.Unmarshal(s, &fields)
			note(InOAuth, fields["oauth"])
			note(InSandbox, fields["sandbox"])
			var sb map[string]json.RawMessage
			_ = json.Unmarshal(fields["sandbox"], &sb)
			note(InLimits, sb["limits"])
		}
	}
	for _, k := range Keys() {
		if !seen[k.In][k.Name] {
			where := k.In
			if where == "" {
				where = "the top level"
			}
			t.Errorf("%s lacks key %q in %s", path, k.Name, where)
		}
	}

	t.Setenv("HOME", "/home/u")
	cfg, err := Load(t.Context(), path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, s := range cfg.Servers {
		if s.Command != "" {
			if _, err := exec.LookPath(s.Command); err != nil {
				continue // bin/demo-server is built by make build, npx comes with Node
			}
		}
		if s.Invalid != "" {
			t.Errorf("server %q is not usable: %s", s.Name, s.Invalid)
		}
	}
}
