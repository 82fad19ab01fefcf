package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerProblemsStayTheirs: a problem inside one server marks that
// server invalid and leaves the others usable.
func TestServerProblemsStayTheirs(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := `{"mcpServers": {
		"good":     {"command": "/bin/sh"},
		"unset":    {"command": "/bin/sh", "env": {"T": "${MCPD_TEST_UNSET}"}},
		"badkey":   {"command": "/bin/sh", "autostrat": true},
		"badtype":  {"command": "/bin/sh", "args": "--x"},
		"nocmd":    {"command": "mcpd-test-no-such-command"},
		"noexec":   {"command": "` + notExec + `"},
		"off":      {"command": "${MCPD_TEST_UNSET}/bin/x", "disabled": true},
		"offbad":   {"command": "x", "disabled": true, "restart": 5}
	}}`
	cfg, err := Parse(filepath.Join(dir, "config.json"), []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	cfg.CheckCommands()
	cfg.CheckCommands() // idempotent
	want := map[string]string{
		"good":    "",
		"unset":   "env.T: ${MCPD_TEST_UNSET} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd",
		"badkey":  `unknown key "autostrat", did you mean "autostart"?`,
		"badtype": "args: want an array of strings, got string",
		"nocmd":   `command: "mcpd-test-no-such-command" not found in mcpd's PATH`,
		"noexec":  "is not executable",
		"off":     "",
		"offbad":  "restart: want a string, got number",
	}
	if len(cfg.Servers) != len(want) {
		t.Fatalf("got %d servers, want %d", len(cfg.Servers), len(want))
	}
	for _, s := range cfg.Servers {
		w := want[s.Name]
		if (w == "") != (s.Invalid == "") || !strings.Contains(s.Invalid, w) {
			t.Errorf("server %q: Invalid = %q, want it to contain %q", s.Name, s.Invalid, w)
		}
	}
	if got := len(cfg.Problems); got != 6 {
		t.Errorf("got %d problems, want 6: %v", got, cfg.Err())
	}
	for _, p := range cfg.Problems {
		if p.Server == "" || p.Path != cfg.Path {
			t.Errorf("problem %+v does not name its server and file", p)
		}
	}
	if got := strings.Join(cfg.Valid(), ","); got != "good,off" {
		t.Errorf("Valid() = %s, want good,off", got)
	}
	for _, s := range cfg.Servers {
		if s.Name == "off" && s.Command != "${MCPD_TEST_UNSET}/bin/x" {
			t.Errorf("disabled server's command = %q, want it unexpanded", s.Command)
		}
	}
}

// TestFileProblemsFailTheFile: what makes the file unusable as a whole is
// an error, and it still lists the servers' problems.
func TestFileProblemsFailTheFile(t *testing.T) {
	for name, data := range map[string]string{
		"syntax":      `{"mcpServers": {"a": {"command": "x",}`,
		"not object":  `[1]`,
		"unknown top": `{"mcpServers": {"a": {"command": "x", "args": 1}}, "extra": 1}`,
		"bad map":     `{"mcpServers": []}`,
		"bad name":    `{"mcpServers": {"a b": {"command": "x"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse("c.json", []byte(data))
			if err == nil || cfg != nil {
				t.Fatalf("Parse = %v, %v; want an error", cfg, err)
			}
			if name == "unknown top" && !strings.Contains(err.Error(), `key "args"`) {
				t.Errorf("error %q does not list the server's problem too", err)
			}
		})
	}
}
