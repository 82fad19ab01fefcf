package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	sandbox "github.com/mcpd-dev/mcpd/internal/sandbox/policy"
)

// parseSandbox parses one server "s" with the given "sandbox" value.
func parseSandbox(t *testing.T, value string) Server {
	t.Helper()
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_CACHE_HOME", "")
	cfg, err := Parse("/etc/mcpd/config.json", []byte(`{"mcpServers": {"s": {"command": "/bin/true", "sandbox": `+value+`}}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg.Servers[0]
}

func TestSandboxConfig(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  *sandbox.Policy
	}{
		{`"strict"`, &sandbox.Policy{}},
		{`false`, nil},
		{`{}`, &sandbox.Policy{}},
		{`{"preset": "strict", "network": true}`, &sandbox.Policy{Network: sandbox.Network{All: true}}},
		{`{"network": [443, 5432, 443]}`, &sandbox.Policy{Network: sandbox.Network{Ports: []uint16{443, 5432}}}},
		{`{"read": ["${HOME}/projects", "/opt/x/"], "write": ["${XDG_CACHE_HOME}/tool"]}`,
			&sandbox.Policy{Read: []string{"/home/u/projects", "/opt/x"}, Write: []string{"/home/u/.cache/tool"}}},
		{`{"limits": {"memory": "256MiB", "pids": 64, "cpu": 0.5, "openFiles": 256}, "bestEffort": true}`,
			&sandbox.Policy{Limits: sandbox.Limits{Memory: 256 << 20, Pids: 64, CPU: 0.5, OpenFiles: 256}, BestEffort: true}},
		{`{"limits": {"memory": "1.5G"}}`, &sandbox.Policy{Limits: sandbox.Limits{Memory: 3 << 29}}},
		{`{"limits": {"memory": 2097152}}`, &sandbox.Policy{Limits: sandbox.Limits{Memory: 2 << 20}}},
		{`{"limits": {"memory": "100 MB"}}`, &sandbox.Policy{Limits: sandbox.Limits{Memory: 100e6}}},
	} {
		s := parseSandbox(t, tc.value)
		if s.Invalid != "" {
			t.Errorf("%s: %s", tc.value, s.Invalid)
			continue
		}
		if diff := cmp.Diff(tc.want, s.Sandbox); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.value, diff)
		}
	}
}

func TestSandboxConfigProblems(t *testing.T) {
	for value, want := range map[string]string{
		`"loose"`:                             `sandbox: unknown preset "loose", want "strict" or an object`,
		`true`:                                `want "strict" or an object`,
		`3`:                                   `sandbox: want an object, got number`,
		`{"reed": []}`:                        `unknown key "reed", did you mean "read"?`,
		`{"read": ["relative/dir"]}`:          `sandbox.read[0]: "relative/dir" is not an absolute path`,
		`{"read": "/x"}`:                      `want an array of absolute paths, got string`,
		`{"write": ["${NOPE_UNSET}/x"]}`:      `${NOPE_UNSET} is not set`,
		`{"network": [0]}`:                    `sandbox.network[0]: invalid port 0`,
		`{"network": "none"}`:                 `want true, false or an array of TCP ports, got string`,
		`{"limits": {"memory": "256"}}`:       `invalid value "256": want a size such as "256MiB"`,
		`{"limits": {"memory": "lots"}}`:      `invalid value "lots"`,
		`{"limits": {"memory": "5 parsecs"}}`: `invalid value "5 parsecs"`,
		`{"limits": {"pids": -1}}`:            `sandbox.limits.pids: invalid value -1: want a positive integer`,
		`{"limits": {"cpu": 0}}`:              `sandbox.limits.cpu: invalid value 0: want a number of CPUs`,
		`{"limits": {"openfiles": 5}}`:        `unknown key "openfiles", did you mean "openFiles"?`,
		`{"bestEffort": "yes"}`:               `sandbox.bestEffort: want a boolean, got string`,
	} {
		s := parseSandbox(t, value)
		if !strings.Contains(s.Invalid, want) {
			t.Errorf("%s: Invalid = %q, want it to contain %q", value, s.Invalid, want)
		}
	}
}
