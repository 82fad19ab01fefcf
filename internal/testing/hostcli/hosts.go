package hostcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Hosts are the host CLIs that package.json installs. The facts on each
// were found by running the pinned version in a throwaway HOME with Node 22
// first on PATH; docs/hosts-cli-facts.md has them at more length.
var Hosts = []Host{
	// Claude Code 2.1.332 (@anthropic-ai/claude-code; native binary copied
	// from @anthropic-ai/claude-code-linux-x64 by its postinstall, which
	// package.json's allowScripts permits).
	//
	// Config: $HOME/.claude.json, key "mcpServers" (user scope; `claude mcp
	// add -s user`). CLAUDE_CONFIG_DIR=D moves it to D/.claude.json; XDG
	// variables do not. A project's .mcp.json in workdir is read too.
	// stdio:  {"type":"stdio","command":"/abs/cmd","args":[],"env":{}}
	//         ("type" may be left out).
	// HTTP:   {"type":"http","url":"http://127.0.0.1:P/mcp","headers":{}}
	// ${VAR} and ${VAR:-default} are expanded in command, args, env, url and
	// headers; an unset one leaves the text as is, and `mcp list` prints a
	// "Missing environment variables" warning after the list.
	// `claude mcp list` (3-10 s here) connects to each server and prints on
	// stdout:
	//   Checking MCP server health…
	//
	//   NAME: /abs/cmd  - ✔ Connected
	//   NAME: http://127.0.0.1:P/mcp (HTTP) - ✔ Connected
	//   NAME: /nonexistent/cmd  - ✘ Failed to connect — ENOENT: no such file or directory, posix_spawn '/nonexistent/cmd'
	//   NAME: http://127.0.0.1:1/mcp (HTTP) - ✘ Failed to connect — ECONNREFUSED: Unable to connect. ...
	// and exits 0 either way. It rewrites .claude.json on every run, adding
	// its own keys (firstStartTime, userID, migrationVersion...) and keeping
	// mcpServers, and writes backups to ~/.claude/backups.
	{
		ID: "claude", Name: "Claude Code", Package: "@anthropic-ai/claude-code", Bin: "claude",
		Env: []string{
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1",
		},
		configPath: func(home, _ string) string { return filepath.Join(home, ".claude.json") },
		write:      writeJSONServers("mcpServers", claudeEntry),
		list:       listText(parseClaude, "mcp", "list"),
	},

	// Gemini CLI 0.61.0 (@google/gemini-cli; pure JavaScript, Node >= 20).
	//
	// Config: $HOME/.gemini/settings.json, key "mcpServers" (`gemini mcp add
	// -s user`; the default scope is the project's .gemini/settings.json in
	// workdir). GEMINI_CLI_HOME=D moves the whole ~/.gemini to D/.gemini.
	// stdio:  {"command":"/abs/cmd","args":[],"env":{}}
	// HTTP:   {"url":"http://127.0.0.1:P/mcp","type":"http","headers":{}}
	//         ({"httpUrl":...} works too; "url" with no type is tried as
	//         Streamable HTTP first.)
	// $VAR and ${VAR} are expanded in the settings.
	// Servers, the user's too, are "Disabled" unless workdir is trusted:
	// Prepare writes ~/.gemini/trustedFolders.json {"WORKDIR":"TRUST_FOLDER"}
	// (GEMINI_CLI_TRUST_WORKSPACE=true would trust any folder).
	// `gemini mcp list` (4-20 s here; it relaunches itself unless
	// GEMINI_CLI_NO_RELAUNCH is set) connects to each server and prints on
	// STDERR, nothing on stdout:
	//   Configured MCP servers:
	//
	//   ✓ NAME: /abs/cmd  (stdio) - Connected
	//   ✓ NAME: http://127.0.0.1:P/mcp (http) - Connected
	//   ✗ NAME: /nonexistent/cmd  (stdio) - Disconnected
	//   ○ NAME: /abs/cmd  (stdio) - Disabled      (untrusted folder)
	// and exits 0. It does not rewrite settings.json.
	{
		ID: "gemini", Name: "Gemini CLI", Package: "@google/gemini-cli", Bin: "gemini",
		Env: []string{
			"GEMINI_CLI_NO_RELAUNCH=true",
		},
		configPath: func(home, _ string) string { return filepath.Join(home, ".gemini", "settings.json") },
		prepare:    trustFolder(".gemini"),
		write:      writeJSONServers("mcpServers", geminiEntry),
		list:       listText(parseGeminiLike, "mcp", "list"),
	},

	// Qwen Code 0.24.4 (@qwen-code/qwen-code; a Gemini CLI fork, Node >= 22).
	//
	// Config: $HOME/.qwen/settings.json, key "mcpServers" (`qwen mcp add`,
	// user scope by default). QWEN_HOME=D moves the whole ~/.qwen to D.
	// stdio:  {"command":"/abs/cmd","args":[],"env":{}}
	// HTTP:   {"httpUrl":"http://127.0.0.1:P/mcp","headers":{}}
	//         ("url" means SSE here, even with "type":"http": it fails
	//         against a Streamable HTTP server.)
	// $VAR and ${VAR} are expanded.
	// Folder trust is off by default; Prepare writes
	// ~/.qwen/trustedFolders.json all the same.
	// `qwen mcp list` (5-15 s here) prints on stdout, coloured even with
	// NO_COLOR and no terminal:
	//   Configured MCP servers:
	//   ✓ NAME: /abs/cmd  (stdio) - Connected
	//   ✓ NAME: http://127.0.0.1:P/mcp (http) - Connected
	//   ✗ NAME: /nonexistent/cmd  (stdio) - Disconnected
	// and exits 0. It rewrites settings.json when it has no "$version"
	// (adds "$version": 4).
	{
		ID: "qwen", Name: "Qwen Code", Package: "@qwen-code/qwen-code", Bin: "qwen",
		Env: []string{
			"QWEN_CODE_NO_RELAUNCH=true",
		},
		configPath: func(home, _ string) string { return filepath.Join(home, ".qwen", "settings.json") },
		prepare:    trustFolder(".qwen"),
		write:      writeJSONServers("mcpServers", qwenEntry),
		list:       listText(parseGeminiLike, "mcp", "list"),
	},

	// opencode 1.18.33 (opencode-ai; native binary copied from
	// opencode-linux-x64 by its postinstall, which allowScripts permits).
	//
	// Config: $XDG_CONFIG_HOME/opencode/ (default $HOME/.config/opencode/):
	// config.json, opencode.json and opencode.jsonc are all read and merged;
	// `opencode mcp add` writes opencode.jsonc when none exists. Key "mcp".
	// OPENCODE_CONFIG=FILE adds one more file. A project's opencode.json in
	// workdir is read too.
	// stdio:  {"type":"local","command":["/abs/cmd","arg"],"environment":{}}
	// HTTP:   {"type":"remote","url":"http://127.0.0.1:P/mcp","headers":{}}
	// ${VAR} is NOT expanded; its own {env:VAR} is.
	// `opencode mcp list` (8-15 s here) prints on stdout (box-drawing, grey
	// ANSI even with NO_COLOR):
	//   ┌  MCP Servers
	//   │
	//   ●  ✓ NAME connected
	//   │      /abs/cmd arg
	//   │
	//   ●  ✗ NAME failed
	//   │      ENOENT: no such file or directory, posix_spawn '/nonexistent/cmd'
	//   │      /nonexistent/cmd
	//   │
	//   └  N server(s)
	// and exits 0. It rewrites opencode.json, adding "$schema".
	{
		ID: "opencode", Name: "opencode", Package: "opencode-ai", Bin: "opencode",
		Env: []string{
			"OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_SHARE=1",
		},
		configPath: func(home, _ string) string {
			return filepath.Join(home, ".config", "opencode", "opencode.json")
		},
		write: writeJSONServers("mcp", opencodeEntry),
		list:  listText(parseOpencode, "mcp", "list"),
	},

	// Codex 0.171.0 (@openai/codex; native binary in the optional
	// dependency @openai/codex-linux-x64, which the registry serves as
	// @openai/codex@0.171.0-linux-x64; no install script).
	//
	// Config: $CODEX_HOME/config.toml (default $HOME/.codex), TOML tables
	// [mcp_servers.NAME]. Runner sets CODEX_HOME=$HOME/.codex.
	// stdio:  command = "/abs/cmd"  args = ["a"]  [mcp_servers.NAME.env] K = "v"
	// HTTP:   url = "http://127.0.0.1:P/mcp"  (http_headers = {...},
	//         bearer_token_env_var = "VAR" for a token read from the
	//         environment)
	// No ${VAR} expansion. Stdio servers get a filtered environment
	// (env_vars = ["NAME"] forwards more).
	// `codex mcp list` (0.5 s) only prints the configuration, it connects to
	// nothing. List uses `codex app-server` (JSON-RPC lines on stdio):
	// initialize, initialized, then mcpServerStatus/list; each server's
	// status has serverInfo when it connected and toolsError ("MCP startup
	// failed: No such file or directory (os error 2)") when it did not
	// (2-3 s, no login needed). Every run prints "WARNING: proceeding, even
	// though we could not create PATH aliases" on stderr when CODEX_HOME is
	// under /tmp. It does not rewrite config.toml.
	{
		ID: "codex", Name: "Codex", Package: "@openai/codex", Bin: "codex",
		homeEnv: func(home string) []string {
			return []string{"CODEX_HOME=" + filepath.Join(home, ".codex")}
		},
		configPath: func(home, _ string) string { return filepath.Join(home, ".codex", "config.toml") },
		prepare: func(home, _ string) error {
			return os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
		},
		write: writeCodex,
		list:  listCodex,
	},
}

// trustFolder writes HOME/dir/trustedFolders.json trusting workdir (and
// its real path, when that differs), keeping the folders already there.
func trustFolder(dir string) func(home, workdir string) error {
	return func(home, workdir string) error {
		p := filepath.Join(home, dir, "trustedFolders.json")
		m := map[string]any{}
		if b, err := os.ReadFile(p); err == nil {
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
		}
		m[workdir] = "TRUST_FOLDER"
		if real, err := filepath.EvalSymlinks(workdir); err == nil {
			m[real] = "TRUST_FOLDER"
		}
		return writeJSONFile(p, m)
	}
}

func writeJSONFile(p string, v any) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}

// writeJSONServers sets key in the JSON file to entries, shaped by shape.
func writeJSONServers(key string, shape func(Entry) map[string]any) func(string, []Entry) error {
	return func(p string, entries []Entry) error {
		doc := map[string]any{}
		if b, err := os.ReadFile(p); err == nil && len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &doc); err != nil {
				return err
			}
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		servers := map[string]any{}
		for _, e := range entries {
			servers[e.Name] = shape(e)
		}
		doc[key] = servers
		return writeJSONFile(p, doc)
	}
}

func args(e Entry) []string {
	if e.Args == nil {
		return []string{}
	}
	return e.Args
}

func claudeEntry(e Entry) map[string]any {
	if e.URL != "" {
		m := map[string]any{"type": "http", "url": e.URL}
		if len(e.Headers) > 0 {
			m["headers"] = e.Headers
		}
		return m
	}
	m := map[string]any{"type": "stdio", "command": e.Command, "args": args(e)}
	if len(e.Env) > 0 {
		m["env"] = e.Env
	}
	return m
}

func geminiEntry(e Entry) map[string]any {
	if e.URL != "" {
		m := map[string]any{"url": e.URL, "type": "http"}
		if len(e.Headers) > 0 {
			m["headers"] = e.Headers
		}
		return m
	}
	m := map[string]any{"command": e.Command, "args": args(e)}
	if len(e.Env) > 0 {
		m["env"] = e.Env
	}
	return m
}

func qwenEntry(e Entry) map[string]any {
	if e.URL != "" {
		m := map[string]any{"httpUrl": e.URL}
		if len(e.Headers) > 0 {
			m["headers"] = e.Headers
		}
		return m
	}
	return geminiEntry(e)
}

func opencodeEntry(e Entry) map[string]any {
	if e.URL != "" {
		m := map[string]any{"type": "remote", "url": e.URL}
		if len(e.Headers) > 0 {
			m["headers"] = e.Headers
		}
		return m
	}
	m := map[string]any{"type": "local", "command": append([]string{e.Command}, e.Args...)}
	if len(e.Env) > 0 {
		m["environment"] = e.Env
	}
	return m
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

func tomlTable(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlString(k) + " = " + tomlString(m[k])
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func writeCodex(p string, entries []Entry) error {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString("[mcp_servers." + tomlString(e.Name) + "]\n")
		if e.URL != "" {
			b.WriteString("url = " + tomlString(e.URL) + "\n")
			if len(e.Headers) > 0 {
				b.WriteString("http_headers = " + tomlTable(e.Headers) + "\n")
			}
		} else {
			b.WriteString("command = " + tomlString(e.Command) + "\n")
			q := make([]string, len(e.Args))
			for i, a := range e.Args {
				q[i] = tomlString(a)
			}
			b.WriteString("args = [" + strings.Join(q, ", ") + "]\n")
			if len(e.Env) > 0 {
				b.WriteString("env = " + tomlTable(e.Env) + "\n")
			}
		}
		b.WriteString("\n")
	}
	return os.WriteFile(p, []byte(b.String()), 0o644)
}

// listText runs the host with args and parses its output with parse.
func listText(parse func(string) map[string]Status, args ...string) func(context.Context, *Runner, string, string) (map[string]Status, string, error) {
	return func(ctx context.Context, r *Runner, home, workdir string) (map[string]Status, string, error) {
		raw, err := r.runCmd(ctx, home, workdir, args...)
		st := parse(raw)
		if err != nil {
			return st, raw, err
		}
		return st, raw, nil
	}
}

func classify(text string) State {
	t := strings.ToLower(strings.TrimSpace(text))
	switch {
	case strings.HasPrefix(t, "connected"):
		return Connected
	case strings.HasPrefix(t, "failed"), strings.HasPrefix(t, "disconnected"):
		return Failed
	}
	return Other
}

// parseClaude reads `claude mcp list`: "NAME: TARGET - ✔ Connected".
func parseClaude(raw string) map[string]Status {
	out := map[string]Status{}
	for _, line := range strings.Split(stripANSI(raw), "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		i := strings.Index(line, ": ")
		j := strings.LastIndex(line, " - ")
		if i <= 0 || j < i {
			continue
		}
		text := strings.TrimSpace(line[j+3:])
		for _, sym := range []string{"✔", "✘", "!", "△", "✗", "✓"} {
			text = strings.TrimSpace(strings.TrimPrefix(text, sym))
		}
		if text == "" {
			continue
		}
		out[line[:i]] = Status{State: classify(text), Text: text}
	}
	return out
}

// parseGeminiLike reads `gemini mcp list` and `qwen mcp list`:
// "✓ NAME: TARGET (stdio) - Connected".
func parseGeminiLike(raw string) map[string]Status {
	out := map[string]Status{}
	for _, line := range strings.Split(stripANSI(raw), "\n") {
		line = strings.TrimSpace(line)
		sym, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.ContainsAny(sym, "✓✗○…◐⚠") {
			continue
		}
		i := strings.Index(rest, ": ")
		j := strings.LastIndex(rest, " - ")
		if i <= 0 || j < i {
			continue
		}
		text := strings.TrimSpace(rest[j+3:])
		out[rest[:i]] = Status{State: classify(text), Text: text}
	}
	return out
}

// parseOpencode reads `opencode mcp list`: "●  ✓ NAME connected", then
// "│      detail" lines, the first of which is the error of a failed one.
func parseOpencode(raw string) map[string]Status {
	out := map[string]Status{}
	var last string
	for _, line := range strings.Split(stripANSI(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "●"); ok {
			f := strings.Fields(rest)
			if len(f) < 3 {
				last = ""
				continue
			}
			text := strings.Join(f[2:], " ")
			out[f[1]] = Status{State: classify(text), Text: text}
			last = f[1]
			continue
		}
		if rest, ok := strings.CutPrefix(line, "│"); ok && last != "" {
			if d := strings.TrimSpace(rest); d != "" {
				st := out[last]
				if st.State == Failed && !strings.Contains(st.Text, ": ") {
					st.Text += ": " + d
					out[last] = st
				}
				continue
			}
		}
		last = ""
	}
	return out
}
