package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
			res, err := importConfig(tt.file, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := marshalNoEscapeIndent(map[string]any{"mcpServers": res.servers})
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
			if len(res.notes) != tt.notes {
				t.Errorf("notes %q, want %d", res.notes, tt.notes)
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
		_, err := importConfig("mcp.json", []byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("import %s: error %v, want it to contain %q", tt.in, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "unmarshal")) {
			t.Errorf("import %s: error %q names Go types", tt.in, err)
		}
	}
}

func TestImportWrite(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(src, []byte(`{"mcpServers": {"fs": {"command": "npx"}}}`), 0o600)
	dest := filepath.Join(dir, "mcpd", "config.json")
	nowhere := filepath.Join(dir, "none.sock")
	r := mcpdctl(t, "--socket", nowhere, "config", "import", src, "--write", "--config", dest)
	if r.code != exitOK || !strings.Contains(r.stdout, "start mcpd to use it (mcpd --config "+dest+")") {
		t.Fatalf("import --write with no mcpd: %+v", r)
	}
	data, err := os.ReadFile(dest)
	if err != nil || !strings.Contains(string(data), `"fs"`) {
		t.Fatalf("written config %q: %v", data, err)
	}
	r = mcpdctl(t, "config", "import", src, "--write", "--config", dest)
	if r.code != exitFailure || !strings.Contains(r.stderr, "already exists; use --merge to add the imported servers to it, or --force") {
		t.Errorf("second import without --force: %+v", r)
	}
	// A running mcpd that reads another file is not told to reload.
	_, sock := startFake(t) // reads /home/u/.config/mcpd/config.json
	r = mcpdctl(t, "--socket", sock, "config", "import", src, "--write", "--force", "--config", dest)
	if r.code != exitOK || !strings.Contains(r.stdout, "the running mcpd reads /home/u/.config/mcpd/config.json, not this file") {
		t.Errorf("import --force with another mcpd running: %+v", r)
	}
}

// importSteps runs each command line in turn against no mcpd and returns
// their transcripts, each followed by the config file at dest when it
// changed; dir (the test's temporary directory) reads TMP, and the absolute
// path of testdata TESTDATA.
func importSteps(t *testing.T, dir, dest string, steps ...[]string) string {
	t.Helper()
	nowhere := filepath.Join(dir, "none.sock")
	var b strings.Builder
	before, _ := os.ReadFile(dest)
	for _, args := range steps {
		r := mcpdctl(t, append([]string{"--socket", nowhere}, args...)...)
		b.WriteString(r.transcript(args, ""))
		if data, err := os.ReadFile(dest); err == nil && string(data) != string(before) {
			b.WriteString("--- " + dest + "\n")
			b.Write(data)
			before = data
		}
		b.WriteString("\n")
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(dir, "TMP", abs, "TESTDATA").Replace(b.String())
}

// TestImportGolden imports each host's config as the host writes it, then
// runs config check on what was written: the file runs under mcpd, or
// import and check both exit 1 and say what is left to fill in.
func TestImportGolden(t *testing.T) {
	setImportPath(t)
	t.Setenv("HOME", "/home/u")
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	t.Setenv("BRAVE_API_KEY", "brave_test")
	for _, tt := range []struct {
		name, src string
		env       map[string]string
	}{
		{"claude_desktop", "claude-desktop/claude_desktop_config.json", nil},
		{"cursor_project", "cursor/app/.cursor/mcp.json", nil},
		{"cursor_global", "cursor/global/mcp.json", nil},
		{"vscode", "vscode/app/.vscode/mcp.json", nil},
		{"vscode_input_set", "vscode/app/.vscode/mcp.json", map[string]string{"MCP_INPUT_GITHUB_TOKEN": "ghp_input"}},
		{"zed", "zed/settings.json", nil},
		{"claude_code_project", "claude-code/app/.mcp.json", nil},
		{"claude_code_user", "claude-code/claude.json", nil},
		{"windsurf", "windsurf/mcp_config.json", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			dest := filepath.Join(dir, "config.json")
			src := filepath.Join("testdata", "import", tt.src)
			got := importSteps(t, dir, dest,
				[]string{"config", "import", src, "--write", "--config", dest},
				[]string{"config", "check", dest})
			checkGolden(t, "import_"+tt.name, got)
		})
	}
}

// TestImportMerge adds imported servers to an existing config, keeping its
// comments and servers; a second import whose server is already there is
// refused naming both entries, and the file is left as it was.
func TestImportMerge(t *testing.T) {
	setImportPath(t)
	t.Setenv("HOME", "/home/u")
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	dir := t.TempDir()
	dest := filepath.Join(dir, "config.json")
	existing, err := os.ReadFile(filepath.Join("testdata", "import", "merge", "existing.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, existing, 0o600); err != nil {
		t.Fatal(err)
	}
	got := importSteps(t, dir, dest,
		[]string{"config", "import", "testdata/import/claude-desktop/claude_desktop_config.json", "--write", "--merge", "--config", dest},
		[]string{"config", "check", dest})
	checkGolden(t, "import_merge", got)
	merged, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(merged), "// My servers.") || !strings.Contains(string(merged), "// always on") {
		t.Errorf("merge lost the comments:\n%s", merged)
	}

	got = importSteps(t, dir, filepath.Join(dir, "absent"),
		[]string{"config", "import", "testdata/import/merge/clash.json", "--write", "--merge", "--config", dest})
	checkGolden(t, "import_merge_clash", got)
	after, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(merged) {
		t.Errorf("a clashing merge changed the file:\n%s", after)
	}
}

// TestImportMergeShapes checks where --merge puts the servers: under the
// existing "mcpServers", else under VS Code's "servers", else in a new
// "mcpServers"; an empty file is written afresh.
func TestImportMergeShapes(t *testing.T) {
	setImportPath(t)
	servers := map[string]importedServer{"new": {Command: "a"}}
	for _, tt := range []struct{ existing, want string }{
		{`{"mcpServers": {"old": {"command": "b"}}}`, `{"mcpServers":{"old":{"command":"b"},"new":{"command":"a"}}}`},
		{`{"servers": {"old": {"command": "b"}}, "inputs": []}`, `{"servers":{"old":{"command":"b"},"new":{"command":"a"}},"inputs":[]}`},
		{`{}`, `{"mcpServers":{"new":{"command":"a"}}}`},
	} {
		out, err := mergeConfig("config.json", []byte(tt.existing), "src.json", servers)
		if err != nil {
			t.Fatalf("merge into %s: %v", tt.existing, err)
		}
		compact, err := marshalCompact(out)
		if err != nil || compact != tt.want {
			t.Errorf("merge into %s: got %s (%v), want %s", tt.existing, out, err, tt.want)
		}
	}
	_, err := mergeConfig("config.json", []byte(`{"servers": {"new": {"command": "b"}}}`), "src.json", servers)
	want := `server "new" is both in config.json ("servers", command "b") and imported from src.json (command "a")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("clash under servers: %v, want %q", err, want)
	}
	_, err = mergeConfig("config.json", []byte(`{"mcpServers": [}`), "src.json", servers)
	if err == nil || !strings.Contains(err.Error(), "merge into config.json: not valid JSON: line 1") {
		t.Errorf("merge into invalid JSON: %v", err)
	}

	dir := t.TempDir()
	dest := filepath.Join(dir, "config.json")
	os.WriteFile(dest, nil, 0o600)
	r := mcpdctl(t, "--socket", filepath.Join(dir, "none.sock"), "config", "import", "testdata/import/zed/settings.json", "--write", "--merge", "--config", dest)
	if data, _ := os.ReadFile(dest); r.code != exitOK || !strings.Contains(string(data), `"postgres"`) {
		t.Errorf("merge into an empty file: %+v\n%s", r, data)
	}
	for _, args := range [][]string{{"--merge"}, {"--write", "--merge", "--force"}, {"--force"}} {
		r := mcpdctl(t, append([]string{"config", "import", "x.json"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("config import %v: exit %d, want usage error: %s", args, r.code, r.stderr)
		}
	}
}

// setImportPath makes PATH the stand-ins of the programs the sample configs
// run (npx, uvx, …), so that the commands mcpd would look up are found
// whatever this machine has installed.
func setImportPath(t *testing.T) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("testdata", "import", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}
