package hosts

import (
	"path/filepath"
	"sort"
	"strings"
)

// codex keeps its servers as [mcp_servers.NAME] tables of
// $CODEX_HOME/config.toml (~/.codex/config.toml): command, args, env,
// env_vars and cwd for a command; url, bearer_token_env_var,
// http_headers and env_http_headers for Streamable HTTP. Its options
// (enabled, startup_timeout_sec, tool_timeout_sec, enabled_tools,
// disabled_tools) stay as they are.
var codex = &Host{
	ID: "codex", Name: "Codex", HTTP: true,
	Processes: []string{"codex"},
	files: func(e Env) []File {
		dir := e.CodexHome
		if dir == "" {
			dir = filepath.Join(e.Home, ".codex")
		}
		return []File{userFile(filepath.Join(dir, "config.toml"), TOML, at("mcp_servers"))}
	},
	shape: func() shape {
		s := std
		s.headers, s.typeKey = "http_headers", ""
		// env_vars names variables of Codex's environment to pass on:
		// mcpd passes its whole environment to the servers it runs.
		s.transportKeys = []string{"bearer_token_env_var", "env_http_headers", "env_vars"}
		s.moreHeaders = codexHeaders
		return s
	}(),
}

// codexHeaders adds the headers Codex takes from its environment:
// env_http_headers = { HEADER = "VAR" } and bearer_token_env_var = "VAR"
// (Authorization: Bearer), as ${VAR}, which mcpd expands from its own.
// Like Codex, they replace a static header of the same name.
func codexHeaders(f map[string]any, h map[string]string) error {
	set := func(k, v string) {
		for old := range h {
			if strings.EqualFold(old, k) {
				delete(h, old)
			}
		}
		h[k] = v
	}
	env, err := asStringMap("env_http_headers", f["env_http_headers"])
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(env) {
		set(k, "${"+env[k]+"}")
	}
	if b, ok := f["bearer_token_env_var"]; ok {
		name, err := asString("bearer_token_env_var", b)
		if err != nil {
			return err
		}
		set("Authorization", "Bearer ${"+name+"}")
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// goose keeps its servers as "extensions" of config.yaml in its config
// directory ($XDG_CONFIG_HOME/goose, else ~/.config/goose, on Linux and
// macOS alike), each a mapping keyed by the extension's name that holds
// "enabled" and the extension's config, tagged by "type": stdio (cmd,
// args, envs, env_keys), streamable_http (uri, headers), sse (no longer
// run by Goose, kept for old files); builtin and platform extensions run
// inside Goose and are not servers.
var goose = &Host{
	ID: "goose", Name: "Goose", HTTP: true,
	Processes: []string{"goose"},
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.ConfigHome, "goose", "config.yaml"), YAML, at("extensions"))}
	},
	shape: shape{command: "cmd", args: "args", env: "envs", url: "uri", headers: "headers",
		typeKey: "type", stdioType: "stdio", httpType: "streamable_http", sseTypes: []string{"sse"},
		transportKeys: []string{"env_keys"}},
}

// continueDev keeps its servers as the items of the "mcpServers" list of
// ~/.continue/config.yaml, each named by its "name": command, args, env,
// cwd for a command; url, type (sse or streamable-http) and
// requestOptions (headers among them) for a remote server. A project's
// .continue/mcpServers/*.yaml are blocks with such a list of their own.
var continueDev = &Host{
	ID: "continue", Name: "Continue", HTTP: true,
	files: func(e Env) []File {
		servers := serverMap{path: []string{"mcpServers"}, list: true}
		files := []File{userFile(filepath.Join(e.Home, ".continue", "config.yaml"), YAML, servers)}
		if e.Project == "" {
			return files
		}
		dir := filepath.Join(".continue", "mcpServers")
		var blocks []string
		for _, pat := range []string{"*.yaml", "*.yml"} {
			m, _ := filepath.Glob(filepath.Join(e.Project, dir, pat))
			blocks = append(blocks, m...)
		}
		sort.Strings(blocks)
		for _, b := range blocks {
			files = append(files, projectFile(e, filepath.Join(dir, filepath.Base(b)), YAML, servers)...)
		}
		return files
	},
	shape: func() shape {
		s := withTypes(std, "", "streamable-http")
		s.headers = "requestOptions.headers"
		return s
	}(),
}
