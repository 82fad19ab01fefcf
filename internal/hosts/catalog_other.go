package hosts

import "path/filepath"

// codex keeps its servers as [mcp_servers.NAME] tables of
// $CODEX_HOME/config.toml (~/.codex/config.toml).
var codex = &Host{
	ID: "codex", Name: "Codex", HTTP: true,
	Processes: []string{"codex"},
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.Home, ".codex", "config.toml"), TOML, at("mcp_servers"))}
	},
	shape: func() shape {
		s := std
		s.headers, s.typeKey = "http_headers", ""
		s.transportKeys = []string{"bearer_token_env_var", "env_http_headers", "env_vars"}
		return s
	}(),
}

// goose keeps its servers as "extensions" of ~/.config/goose/config.yaml;
// built-in extensions are not servers.
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

// continueDev keeps its servers as a list named by "name" in
// ~/.continue/config.yaml.
var continueDev = &Host{
	ID: "continue", Name: "Continue", HTTP: true,
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.Home, ".continue", "config.yaml"), YAML, serverMap{path: []string{"mcpServers"}, list: true})}
	},
	shape: withTypes(std, "", "streamable-http"),
}
