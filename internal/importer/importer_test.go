package importer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func marshalCompact(b []byte) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func TestImportConfig(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	tests := []struct {
		name, file, in, want string
		notes                int
	}{
		{"claude", "claude_desktop_config.json", `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "b"}}}, "globalShortcut": "x"}`,
			`{"mcpServers":{"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/tmp"],"env":{"A":"b"}}}}`, 0},
		{"cursor remote sse", "mcp.json", `{"mcpServers": {"remote": {"url": "https://x/sse"}, "local": {"command": "uvx", "args": ["mcp-server-git"]}}}`,
			`{"mcpServers":{"local":{"command":"uvx","args":["mcp-server-git"]},"remote":{"url":"https://x/sse","type":"sse"}}}`, 1},
		{"remote servers", "mcp.json", `{"mcpServers": {"a": {"type": "http", "url": "https://a/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"}}, "w": {"serverUrl": "https://w/mcp"}, "c": {"type": "streamableHttp", "url": "http://c/mcp"}, "bad": {"type": "ws", "url": "ws://x"}, "own": {"url": "http://127.0.0.1:6273/mcp"}}}`,
			`{"mcpServers":{"a":{"url":"https://a/mcp","headers":{"Authorization":"Bearer ${TOK}"}},"c":{"url":"http://c/mcp"},"w":{"url":"https://w/mcp"}}}`, 2},
		{"vscode", "mcp.json", `{"inputs": [{"id": "gh-token", "type": "promptString"}], "servers": {"gh": {"type": "stdio", "command": "docker", "args": ["run", "-i", "ghcr.io/github/github-mcp-server"], "env": {"TOKEN": "${input:gh-token}"}}, "web": {"type": "http", "url": "https://x"}}}`,
			`{"mcpServers":{"gh":{"command":"docker","args":["run","-i","ghcr.io/github/github-mcp-server"],"env":{"TOKEN":"${MCP_INPUT_GH_TOKEN}"}},"web":{"url":"https://x"}}}`, 1},
		{"vscode settings", "settings.json", `{"editor.fontSize": 12, "mcp": {"servers": {"m": {"command": "node", "args": ["${workspaceFolder}/s.js"]}}}}`,
			`{"mcpServers":{"m":{"command":"node","args":["${HOME}/s.js"]}}}`, 1},
		{"vscode workspace", "/p/app/.vscode/mcp.json", `{"servers": {"m": {"command": "./bin/s", "args": ["${workspaceFolder}/s.js", "${workspaceFolderBasename}"], "cwd": "sub"}}}`,
			`{"mcpServers":{"m":{"command":"/p/app/bin/s","args":["/p/app/s.js","app"],"cwd":"/p/app/sub"}}}`, 0},
		{"global cursor is no workspace", "/home/u/.cursor/mcp.json", `{"mcpServers": {"m": {"command": "node", "args": ["${workspaceFolder}"]}}}`,
			`{"mcpServers":{"m":{"command":"node","args":["${HOME}"]}}}`, 1},
		{"bridge entries skipped", "mcp.json", `{"mcpServers": {"shared": {"command": "/home/u/.local/bin/mcpdctl", "args": ["bridge", "shared"]}, "own": {"command": "node", "args": ["s.js"]}}}`,
			`{"mcpServers":{"own":{"command":"node","args":["s.js"]}}}`, 1},
		{"vscode with comments", "mcp.json", "{\n  // local servers\n  \"servers\": {\"m\": {\"command\": \"node\", /* entry */ \"args\": [\"s.js\",],},},\n}",
			`{"mcpServers":{"m":{"command":"node","args":["s.js"]}}}`, 0},
		{"names mcpd refuses", "mcp.json", `{"mcpServers": {"my server": {"command": "a"}, "a__b": {"command": "b"}}}`,
			`{"mcpServers":{"a_b":{"command":"b"},"my-server":{"command":"a"}}}`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Convert(tt.file, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := MarshalIndent(map[string]any{"mcpServers": res.Servers})
			if err != nil {
				t.Fatal(err)
			}
			compact, err := marshalCompact(out)
			if err != nil {
				t.Fatal(err)
			}
			if compact != tt.want {
				t.Errorf("got  %s\nwant %s", compact, tt.want)
			}
			if len(res.Notes) != tt.notes {
				t.Errorf("notes %q, want %d", res.Notes, tt.notes)
			}
		})
	}
}

// TestImportErrorsInWords checks that a key of the wrong type is named in
// words, never with encoding/json's Go type names.
func TestImportErrorsInWords(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"other": 1}`, `no MCP servers found: want "mcpServers"`},
		{`[1]`, `the file must be an object, not an array`},
		{`{"mcpServers": []}`, `"mcpServers" must be an object, not an array`},
		{`{"mcpServers": {"x": "npx"}}`, `server "x" in mcpServers must be an object, not a string`},
		{`{"mcpServers": {"x": {"command": "npx", "args": "-y"}}}`, `server "x" in mcpServers: key "args" must be an array of strings, not a string`},
		{`{"mcpServers": {"x": {"command": "npx", "args": ["-y", 3]}}}`, `server "x" in mcpServers: key "args[1]" must be a string, not a number`},
		{`{"mcpServers": {"x": {"command": "npx", "env": {"PORT": 80}}}}`, `server "x" in mcpServers: key "env.PORT" must be a string, not a number`},
		{`{"mcpServers": {"x": {"command": ["npx"]}}}`, `server "x" in mcpServers: key "command" must be a string, not an array`},
		{`{"mcpServers": {"x": {"command": "npx", "disabled": "yes"}}}`, `server "x" in mcpServers: key "disabled" must be true or false, not a string`},
		{`{"context_servers": {"x": {"command": {"path": 1}}}}`, `server "x" in context_servers: key "command.path" must be a string, not a number`},
		{"{\n  \"mcpServers\": {,\n}", `not valid JSON: line 2, column 18: invalid character ','`},
	} {
		_, err := Convert("mcp.json", []byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("import %s: error %v, want it to contain %q", tt.in, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "unmarshal")) {
			t.Errorf("import %s: error %q names Go types", tt.in, err)
		}
	}
}

// TestImportMergeShapes checks where --merge puts the servers: under the
// existing "mcpServers", else under VS Code's "servers", else in a new
// "mcpServers"; an empty file is written afresh.
func TestImportMergeShapes(t *testing.T) {
	servers := map[string]Server{"new": {Command: "a"}}
	for _, tt := range []struct{ existing, want string }{
		{`{"mcpServers": {"old": {"command": "b"}}}`, `{"mcpServers":{"old":{"command":"b"},"new":{"command":"a"}}}`},
		{`{"servers": {"old": {"command": "b"}}, "inputs": []}`, `{"servers":{"old":{"command":"b"},"new":{"command":"a"}},"inputs":[]}`},
		{`{}`, `{"mcpServers":{"new":{"command":"a"}}}`},
	} {
		out, err := MergeConfig("config.json", []byte(tt.existing), "src.json", servers)
		if err != nil {
			t.Fatalf("merge into %s: %v", tt.existing, err)
		}
		compact, err := marshalCompact(out)
		if err != nil || compact != tt.want {
			t.Errorf("merge into %s: got %s (%v), want %s", tt.existing, out, err, tt.want)
		}
	}
	_, err := MergeConfig("config.json", []byte(`{"servers": {"new": {"command": "b"}}}`), "src.json", servers)
	want := `server "new" is both in config.json ("servers", command "b") and imported from src.json (command "a")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("clash under servers: %v, want %q", err, want)
	}
	_, err = MergeConfig("config.json", []byte(`{"mcpServers": [}`), "src.json", servers)
	if err == nil || !strings.Contains(err.Error(), "merge into config.json: not valid JSON: line 1") {
		t.Errorf("merge into invalid JSON: %v", err)
	}
}
