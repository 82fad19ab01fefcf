package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseValid(t *testing.T) {
	t.Setenv("MCPD_TEST_TOKEN", "s3cret")
	t.Setenv("MCPD_TEST_EMPTY", "")
	tests := []struct {
		name string
		path string
		json string
		want []Server
	}{
		{
			name: "empty object",
			path: "config.json",
			json: `{}`,
			want: nil,
		},
		{
			name: "defaults",
			path: "/etc/mcpd/config.json",
			json: `{"mcpServers": {"a": {"command": "npx"}}}`,
			want: []Server{{
				Name: "a", Command: "npx", Protocol: "auto", Restart: "on-failure",
				ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second,
			}},
		},
		{
			name: "every key",
			path: "/etc/mcpd/config.json",
			json: `{
				"$schema": "https://example.com/schema.json",
				"mcpServers": {
					"full": {
						"type": "stdio",
						"command": "/usr/bin/srv",
						"args": ["--token", "${MCPD_TEST_TOKEN}", "x$y", "$${LITERAL}"],
						"env": {"TOKEN": "${env:MCPD_TEST_TOKEN}", "LEVEL": "${MCPD_TEST_EMPTY:-info}", "PLAIN": "v"},
						"cwd": "/srv/work",
						"protocol": "legacy",
						"autostart": true,
						"restart": "always",
						"requestTimeout": "1.5s",
						"shutdownGrace": 500,
						"discoverTimeout": "250ms",
						"stdinTimeout": "30s",
						"disabled": false,
						"maxLineSize": 1048576
					}
				}
			}`,
			want: []Server{{
				Name: "full", Command: "/usr/bin/srv",
				Args:     []string{"--token", "s3cret", "x$y", "${LITERAL}"},
				Env:      map[string]string{"TOKEN": "s3cret", "LEVEL": "info", "PLAIN": "v"},
				Cwd:      "/srv/work",
				Protocol: "legacy", Autostart: true, Restart: "always",
				RequestTimeout: 1500 * time.Millisecond, ShutdownGrace: 500 * time.Millisecond,
				DiscoverTimeout: 250 * time.Millisecond, MaxLineSize: 1 << 20,
				StdinTimeout: 30 * time.Second,
			}},
		},
		{
			name: "relative command and cwd resolve against the config directory",
			path: "/etc/mcpd/config.json",
			json: `{"mcpServers": {"a": {"command": "../bin/demo", "cwd": "data/./x"}, "b": {"command": "./b", "cwd": "/abs/../tmp"}}}`,
			want: []Server{
				{Name: "a", Command: "/etc/bin/demo", Cwd: "/etc/mcpd/data/x", Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second},
				{Name: "b", Command: "/etc/mcpd/b", Cwd: "/tmp", Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second},
			},
		},
		{
			name: "VS Code servers and mcpServers merge, sorted by name; inputs ignored",
			path: "/c/config.json",
			json: `{"inputs": [{"type": "promptString", "id": "x"}],
				"servers": {"zeta": {"type": "stdio", "command": "z"}, "alpha.1": {"command": "a"}},
				"mcpServers": {"mid_dle-2": {"command": "m", "args": [], "env": {}}}}`,
			want: []Server{
				{Name: "alpha.1", Command: "a", Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second},
				{Name: "mid_dle-2", Command: "m", Args: []string{}, Env: map[string]string{}, Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second},
				{Name: "zeta", Command: "z", Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second},
			},
		},
		{
			name: "byte order mark is skipped",
			path: "/c/config.json",
			json: "\xef\xbb\xbf" + `{"mcpServers": {"a": {"command": "a"}}}`,
			want: []Server{{Name: "a", Command: "a", Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseStrict(tt.path, []byte(tt.json))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Path != tt.path {
				t.Errorf("Path = %q, want %q", cfg.Path, tt.path)
			}
			if string(cfg.Data) != tt.json {
				t.Errorf("Data does not hold the parsed bytes")
			}
			if diff := cmp.Diff(tt.want, cfg.Servers); diff != "" {
				t.Errorf("Servers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Setenv("MCPD_TEST_SET", "v")
	t.Setenv("MCPD_TEST_UNSET", "")
	os.Unsetenv("MCPD_TEST_UNSET")
	// srv wraps the body of server "foo".
	srv := func(body string) string { return `{"mcpServers": {"foo": {` + body + `}}}` }
	tests := []struct {
		name string
		json string
		want string
	}{
		// Syntax.
		{"empty file", "  \n", `config.json: file is empty, want a JSON object`},
		{"syntax error has line and column", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"y\"}\n  }\n}",
			`config.json:3:26: invalid character '"' after object key:value pair`},
		{"truncated", `{"mcpServers": {`, `config.json:1:16: unexpected end of JSON input`},
		{"trailing garbage", "{}\n}", `config.json:2:1: invalid character '}' after top-level value`},
		{"error after a comment keeps its position", "{\n// c\n /* d */ x}", `config.json:3:10: invalid character 'x' looking for beginning of object key string`},
		{"column counts runes", `{"é": 1 x}`, `config.json:1:9: invalid character 'x' after object key:value pair`},

		// Top level.
		{"top level array", `[]`, `config.json: the top level must be a JSON object, got array`},
		{"unknown top key", `{"foo": 1}`, `config.json: unknown key "foo"`},
		{"misspelt top key", `{"mcpservers": {}}`, `config.json: unknown key "mcpservers", did you mean "mcpServers"?`},
		{"mcpServers wrong type", `{"mcpServers": []}`, `config.json: key "mcpServers": want an object, got array`},
		{"mcpServers null", `{"mcpServers": null}`, `config.json: key "mcpServers": want an object, got null`},
		{"duplicate top key", `{"mcpServers": {}, "mcpServers": {}}`, `config.json: duplicate key "mcpServers"`},
		{"duplicate server", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `config.json: key "mcpServers": duplicate key "a"`},
		{"server in both maps", `{"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "y"}}}`,
			`config.json: server "a": defined in both "mcpServers" and "servers"`},

		// Names.
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, `config.json: key "mcpServers": server name must not be empty`},
		{"name with space", `{"servers": {"a b": {"command": "x"}}}`, `config.json: server "a b": invalid name: use only letters, digits, "_", "." and "-"`},
		{"name with slash", `{"mcpServers": {"a/b": {"command": "x"}}}`, `config.json: server "a/b": invalid name: use only letters, digits, "_", "." and "-"`},
		{"name with double underscore", `{"mcpServers": {"a__b": {"command": "x"}}}`,
			`config.json: server "a__b": invalid name: "__" is reserved as the separator of aggregated tool names`},

		// Server object and command.
		{"server not an object", `{"mcpServers": {"foo": "npx"}}`, `config.json: server "foo": want an object, got string`},
		{"missing command", srv(`"args": []`), `config.json: server "foo": missing required key "command"`},
		{"empty command", srv(`"command": ""`), `config.json: server "foo": key "command": must not be empty`},
		{"command wrong type", srv(`"command": ["npx"]`), `config.json: server "foo": key "command": want a string, got array`},
		{"command expands to empty", srv(`"command": "${MCPD_TEST_UNSET:-}"`), `config.json: server "foo": key "command": "${MCPD_TEST_UNSET:-}" expands to an empty string`},
		{"unknown server key", srv(`"command": "x", "foo": 1`), `config.json: server "foo": unknown key "foo"`},
		{"misspelt server key", srv(`"comand": "x"`), "config.json: server \"foo\": unknown key \"comand\", did you mean \"command\"?\n" +
			`config.json: server "foo": missing required key "command"`},
		{"snake case key", srv(`"command": "x", "request_timeout": "1s"`), `config.json: server "foo": unknown key "request_timeout", did you mean "requestTimeout"?`},
		{"duplicate server key", srv(`"command": "x", "command": "y"`), `config.json: server "foo": duplicate key "command"`},

		// Types.
		{"type http", srv(`"type": "http", "command": "x"`), `config.json: server "foo": key "type": "http" is for a remote server with a "url"; a command server is "stdio"`},
		{"type sse", srv(`"type": "sse", "command": "x"`), `config.json: server "foo": key "type": "sse" is for a remote server with a "url"; a command server is "stdio"`},
		{"type unknown", srv(`"type": "ws", "url": "http://localhost:1/mcp"`), `config.json: server "foo": key "type": invalid value "ws", want one of "stdio", "http", "sse"`},
		{"url and command", srv(`"url": "http://localhost:1/mcp", "command": "x"`), `config.json: server "foo": has both "command" and "url": a server is either a command or a remote url`},
		{"headers and command", srv(`"headers": {"A": "b"}, "command": "x"`), `config.json: server "foo": has "command" and the keys of a remote server ("headers"): a server is either a command or a remote url`},
		{"url not http", srv(`"url": "ftp://localhost/mcp"`), `config.json: server "foo": key "url": want an http:// or https:// URL`},
		{"url relative", srv(`"url": "/mcp"`), `config.json: server "foo": key "url": want an http:// or https:// URL`},
		{"url with args", srv(`"url": "http://localhost:1/mcp", "args": []`), `config.json: server "foo": key "args": only for command servers; this server has a url`},
		{"headers not object", srv(`"url": "http://h/mcp", "headers": ["a"]`), `config.json: server "foo": key "headers": want an object, got array`},
		{"header number", srv(`"url": "http://h/mcp", "headers": {"X-N": 1}`), `config.json: server "foo": key "headers.X-N": want a string, got number`},
		{"header managed", srv(`"url": "http://h/mcp", "headers": {"Mcp-Session-Id": "x"}`), `config.json: server "foo": key "headers.Mcp-Session-Id": set by mcpd's HTTP transport; remove it`},
		{"header name", srv(`"url": "http://h/mcp", "headers": {"a b": "x"}`), `config.json: server "foo": key "headers": invalid header name "a b"`},
		{"header unset var", srv(`"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${MCPD_TEST_UNSET_TOKEN}"}`), `config.json: server "foo": key "headers.Authorization": ${MCPD_TEST_UNSET_TOKEN} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MCPD_TEST_UNSET_TOKEN:-default})`},
		{"oauth unknown key", srv(`"url": "http://h/mcp", "oauth": {"clientID": "x"}`), `config.json: server "foo": key "oauth": unknown key "clientID", did you mean "clientId"?`},
		{"oauth port", srv(`"url": "http://h/mcp", "oauth": {"redirectPort": 70000}`), `config.json: server "foo": key "oauth.redirectPort": invalid port 70000: want 1 to 65535`},
		{"oauth secret without id", srv(`"url": "http://h/mcp", "oauth": {"clientSecret": "s"}`), `config.json: server "foo": key "oauth.clientSecret": needs oauth.clientId`},
		{"oauth and authorization", srv(`"url": "http://h/mcp", "oauth": {}, "headers": {"authorization": "x"}`), `config.json: server "foo": key "headers.Authorization": set by OAuth; remove it or the "oauth" key`},
		{"args not array", srv(`"command": "x", "args": "a b"`), `config.json: server "foo": key "args": want an array of strings, got string`},
		{"args element number", srv(`"command": "x", "args": ["a", 1]`), `config.json: server "foo": key "args[1]": want a string, got number`},
		{"env not object", srv(`"command": "x", "env": ["A=1"]`), `config.json: server "foo": key "env": want an object, got array`},
		{"env value number", srv(`"command": "x", "env": {"PORT": 80}`), `config.json: server "foo": key "env.PORT": want a string, got number`},
		{"env bad name", srv(`"command": "x", "env": {"A=B": "1"}`), `config.json: server "foo": key "env": invalid variable name "A=B"`},
		{"cwd number", srv(`"command": "x", "cwd": 1`), `config.json: server "foo": key "cwd": want a string, got number`},
		{"autostart string", srv(`"command": "x", "autostart": "yes"`), `config.json: server "foo": key "autostart": want a boolean, got string`},
		{"disabled null", srv(`"command": "x", "disabled": null`), `config.json: server "foo": key "disabled": want a boolean, got null`},
		{"protocol invalid", srv(`"command": "x", "protocol": "v2"`), `config.json: server "foo": key "protocol": invalid value "v2", want one of "auto", "modern", "legacy"`},
		{"restart invalid", srv(`"command": "x", "restart": "no"`), `config.json: server "foo": key "restart": invalid value "no", want one of "on-failure", "always", "never"`},
		{"maxLineSize zero", srv(`"command": "x", "maxLineSize": 0`), `config.json: server "foo": key "maxLineSize": invalid value 0: want a positive integer`},
		{"maxLineSize fraction", srv(`"command": "x", "maxLineSize": 1.5`), `config.json: server "foo": key "maxLineSize": invalid value 1.5: want a positive integer`},
		{"maxLineSize string", srv(`"command": "x", "maxLineSize": "1MiB"`), `config.json: server "foo": key "maxLineSize": want a positive integer, got string`},

		// Durations.
		{"duration unparsable", srv(`"command": "x", "requestTimeout": "abc"`), `config.json: server "foo": key "requestTimeout": invalid duration "abc"`},
		{"duration without unit", srv(`"command": "x", "requestTimeout": "10"`), `config.json: server "foo": key "requestTimeout": invalid duration "10"`},
		{"duration negative", srv(`"command": "x", "shutdownGrace": "-1s"`), `config.json: server "foo": key "shutdownGrace": invalid duration "-1s": must be positive`},
		{"duration zero", srv(`"command": "x", "discoverTimeout": "0s"`), `config.json: server "foo": key "discoverTimeout": invalid duration "0s": must be positive`},
		{"stdinTimeout zero", srv(`"command": "x", "stdinTimeout": 0`), `config.json: server "foo": key "stdinTimeout": invalid duration 0: must be positive`},
		{"stdinTimeout unparsable", srv(`"command": "x", "stdinTimeout": "soon"`), `config.json: server "foo": key "stdinTimeout": invalid duration "soon"`},
		{"duration negative ms", srv(`"command": "x", "requestTimeout": -5`), `config.json: server "foo": key "requestTimeout": invalid duration -5: must be positive`},
		{"duration fractional ms", srv(`"command": "x", "requestTimeout": 1.5`), `config.json: server "foo": key "requestTimeout": invalid duration 1.5: a number is a whole count of milliseconds`},
		{"duration huge ms", srv(`"command": "x", "requestTimeout": 9300000000000`), `config.json: server "foo": key "requestTimeout": invalid duration 9300000000000: too large (at most 9223372036854 ms)`},
		{"duration bool", srv(`"command": "x", "requestTimeout": true`), `config.json: server "foo": key "requestTimeout": want a duration (a string like "1.5s" or integer milliseconds), got boolean`},

		// Expansion.
		{"undefined variable", srv(`"command": "x", "args": ["${MCPD_TEST_UNSET}"]`),
			`config.json: server "foo": key "args[0]": ${MCPD_TEST_UNSET} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MCPD_TEST_UNSET:-default})`},
		{"undefined in command", srv(`"command": "${MCPD_TEST_UNSET}/bin/x"`),
			`config.json: server "foo": key "command": ${MCPD_TEST_UNSET} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MCPD_TEST_UNSET:-default})`},
		{"undefined in env", srv(`"command": "x", "env": {"T": "${env:MCPD_TEST_UNSET}"}`),
			`config.json: server "foo": key "env.T": ${MCPD_TEST_UNSET} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MCPD_TEST_UNSET:-default})`},
		{"undefined in cwd", srv(`"command": "x", "cwd": "${MCPD_TEST_UNSET}"`),
			`config.json: server "foo": key "cwd": ${MCPD_TEST_UNSET} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MCPD_TEST_UNSET:-default})`},
		{"unterminated", srv(`"command": "x", "args": ["${MCPD_TEST_SET"]`), `config.json: server "foo": key "args[0]": unterminated "${" in "${MCPD_TEST_SET"`},
		{"bad reference", srv(`"command": "x", "args": ["${1X}"]`), `config.json: server "foo": key "args[0]": invalid variable reference "${1X}"`},
		{"empty reference", srv(`"command": "x", "args": ["${}"]`), `config.json: server "foo": key "args[0]": invalid variable reference "${}"`},
		{"VS Code input", srv(`"command": "x", "env": {"K": "${input:api-key}"}`),
			`config.json: server "foo": key "env.K": "${input:api-key}": VS Code input variables are not supported; use an environment variable`},

		// Several problems are all reported, in file order.
		{"several", `{"mcpServers": {"b": {"command": "", "restart": "x"}, "a": {}}, "extra": 1}`,
			"config.json: server \"b\": key \"command\": must not be empty\n" +
				"config.json: server \"b\": key \"restart\": invalid value \"x\", want one of \"on-failure\", \"always\", \"never\"\n" +
				"config.json: server \"a\": missing required key \"command\"\n" +
				"config.json: unknown key \"extra\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseStrict("config.json", []byte(tt.json))
			if err == nil {
				t.Fatalf("Parse succeeded with %d servers, want error %q", len(cfg.Servers), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error mismatch\n got: %s\nwant: %s", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error %T does not contain a *config.Error", err)
			} else if ce.Path != "config.json" {
				t.Errorf("Error.Path = %q", ce.Path)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := parseStrict("c.json", []byte("{\n\"servers\": {\"s\": {\"command\": \"x\", \"shutdownGrace\": \"soon\"}}}"))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *Error", err)
	}
	want := &Error{Path: "c.json", Server: "s", Key: "shutdownGrace", Msg: `invalid duration "soon"`}
	if diff := cmp.Diff(want, ce); diff != "" {
		t.Errorf("Error mismatch (-want +got):\n%s", diff)
	}

	_, err = parseStrict("c.json", []byte("{\n\n  x"))
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *Error", err)
	}
	if ce.Line != 3 || ce.Column != 3 {
		t.Errorf("syntax error at %d:%d, want 3:3", ce.Line, ce.Column)
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "alpha", "EMPTY": "", "B_2": "beta"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${A}", want: "alpha"},
		{in: "x${A}y${B_2}z", want: "xalphaybetaz"},
		{in: "${env:A}", want: "alpha"},
		{in: "${EMPTY}", want: ""},
		{in: "${EMPTY:-d}", want: "d"},
		{in: "${MISSING:-d}", want: "d"},
		{in: "${MISSING:-}", want: ""},
		{in: "${A:-d}", want: "alpha"},
		{in: "${MISSING:-a b:c-d}", want: "a b:c-d"},
		{in: "${MISSING:-${A}", want: "${A"}, // the default is literal and ends at the first "}"
		{in: "$A $$ $ ${A}$", want: "$A $$ $ alpha$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$${A}", want: "$${A}"}, // left to right: "$" is literal, then "$${" is "${"
		{in: "$$$${A}", want: "$$${A}"},
		{in: "${MISSING}", wantErr: `${MISSING} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MISSING:-default})`},
		{in: "${env:MISSING}", wantErr: `${MISSING} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${MISSING:-default})`},
		{in: "${A", wantErr: `unterminated "${" in "${A"`},
		{in: "${A-x}", wantErr: `invalid variable reference "${A-x}"`},
		{in: "${ A}", wantErr: `invalid variable reference "${ A}"`},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, lookup, false)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("expand(%q) = %q, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")

	_, err := Load(t.Context(), path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing file: %v, want an error wrapping fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}

	data := `{"mcpServers": {"demo": {"command": "./demo", "autostart": true}}}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(t.Context(), path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{Path: path, Data: []byte(data), Servers: []Server{{
		Name: "demo", Command: filepath.Join(dir, "demo"), Autostart: true,
		Protocol: "auto", Restart: "on-failure", ShutdownGrace: 2 * time.Second, DiscoverTimeout: 3 * time.Second, StdinTimeout: 10 * time.Second,
	}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}

	if err := os.WriteFile(path, []byte(`{"mcpServers": {"demo": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(t.Context(), path)
	if err != nil {
		t.Fatalf("Load of a file with an invalid server: %v", err)
	}
	if err := cfg.Err(); err == nil || err.Error() != path+`: server "demo": missing required key "command"` {
		t.Errorf("Load of a file with an invalid server: problems %v", err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Invalid != `missing required key "command"` {
		t.Errorf("Load of a file with an invalid server: servers %+v", cfg.Servers)
	}
}

// TestExamples checks that the example configs shipped in examples/ are valid.
func TestExamples(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for _, name := range []string{"config.json", "config.full.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "examples", name)
			cfg, err := Load(t.Context(), path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(cfg.Servers) == 0 {
				t.Fatal("no servers")
			}
			demo := filepath.Join(mustAbs(t, filepath.Join("..", "..")), "bin", "demo-server")
			i := slices.IndexFunc(cfg.Servers, func(s Server) bool { return s.Name == "demo" })
			if i < 0 {
				t.Fatalf("no server %q in %+v", "demo", cfg.Servers)
			}
			if got := cfg.Servers[i].Command; got != demo {
				t.Errorf("demo command = %q, want %q", got, demo)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// VS Code's mcp.json may have comments and trailing commas; they are read
// as whitespace.
func TestParseCommentsAndTrailingCommas(t *testing.T) {
	data := []byte(`{
  // the servers
  "servers": {
    "a": {"command": "x", "args": ["1", "2",],}, /* trailing */
  },
}`)
	cfg, err := parseStrict("mcp.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "a" || cfg.Servers[0].Command != "x" || len(cfg.Servers[0].Args) != 2 {
		t.Fatalf("servers %+v", cfg.Servers)
	}
	if string(cfg.Data) != string(data) {
		t.Error("the config's Data is not the file as written")
	}
}

func TestBlankComments(t *testing.T) {
	for in, want := range map[string]string{
		"{\"a\": \"//not\", // yes\n\"b\": 1}": "{\"a\": \"//not\",       \n\"b\": 1}",
		"{/* a\nb */ \"x\": \"\\\"/*\"}":       "{    \n     \"x\": \"\\\"/*\"}",
		"{\"x\": 1} /* unterminated":           "{\"x\": 1}                ",
		`{"q": "a\\"} // end`:                  `{"q": "a\\"}       `,
	} {
		if got := string(blankComments([]byte(in))); got != want {
			t.Errorf("blankComments(%q) = %q, want %q", in, got, want)
		}
	}
}

// parseStrict is Parse with the problems of single servers as its error, as
// Parse reported them all before servers were kept apart.
func parseStrict(path string, data []byte) (*Config, error) {
	cfg, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := cfg.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}
