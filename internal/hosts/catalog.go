package hosts

import "path/filepath"

// All is every host connect knows, in the order hosts lists them. Each
// host's paths and keys are those of its own documentation.
func All() []*Host {
	return []*Host{
		claudeDesktop, claudeCode, cursor, vscode, vscodeInsiders, windsurf, zed,
		gemini, qwen, codex, opencode, goose, continueDev, cline, lmStudio, copilotCLI,
	}
}

// claudeDesktop runs every server as a command: its config file has no
// remote servers (those are added in its settings as connectors).
var claudeDesktop = &Host{
	ID: "claude-desktop", Name: "Claude Desktop",
	Processes: []string{"claude-desktop", "Claude"},
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.ConfigHome, "Claude", "claude_desktop_config.json"), JSON, at("mcpServers"))}
	},
	shape: std,
}

// claudeCode keeps the user's servers and each project's private ones in
// ~/.claude.json, a project's shared ones in its .mcp.json. It rewrites
// ~/.claude.json while it runs.
var claudeCode = &Host{
	ID: "claude-code", Name: "Claude Code", HTTP: true,
	Processes: []string{"claude"},
	files: func(e Env) []File {
		projects := serverMap{path: []string{"projects", "*", "mcpServers"}, workspaceAt: 1}
		return append([]File{userFile(filepath.Join(e.Home, ".claude.json"), JSON, at("mcpServers"), projects)},
			projectFile(e, ".mcp.json", JSON, at("mcpServers"))...)
	},
	shape: func() shape {
		s := withTypes(std, "stdio", "http")
		// headersHelper runs a command for a remote server's headers;
		// oauth signs in to it.
		s.transportKeys = append(s.transportKeys, "headersHelper", "oauth")
		return s
	}(),
}

var cursor = &Host{
	ID: "cursor", Name: "Cursor", HTTP: true,
	Processes: []string{"cursor", "Cursor"},
	files: func(e Env) []File {
		return append([]File{userFile(filepath.Join(e.Home, ".cursor", "mcp.json"), JSON, at("mcpServers"))},
			projectFile(e, filepath.Join(".cursor", "mcp.json"), JSON, at("mcpServers"))...)
	},
	shape: std,
}

// vscodeFiles are VS Code's files under its user directory dir: mcp.json,
// and the "mcp" section settings.json had before it.
func vscodeFiles(dir string) func(Env) []File {
	return func(e Env) []File {
		user := filepath.Join(e.ConfigHome, dir, "User")
		return append([]File{
			userFile(filepath.Join(user, "mcp.json"), JSON, at("servers")),
			userFile(filepath.Join(user, "settings.json"), JSON, at("mcp", "servers")),
		}, projectFile(e, filepath.Join(".vscode", "mcp.json"), JSON, at("servers"))...)
	}
}

var vscode = &Host{
	ID: "vscode", Name: "VS Code", HTTP: true,
	files: vscodeFiles("Code"),
	shape: vscodeShape,
}

var vscodeInsiders = &Host{
	ID: "vscode-insiders", Name: "VS Code Insiders", HTTP: true,
	files: vscodeFiles("Code - Insiders"),
	shape: vscodeShape,
}

var windsurf = &Host{
	ID: "windsurf", Name: "Windsurf", HTTP: true,
	Processes: []string{"windsurf"},
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.Home, ".codeium", "windsurf", "mcp_config.json"), JSON, at("mcpServers"))}
	},
	shape: func() shape {
		s := std
		s.url, s.sseURL = "serverUrl", "url"
		s.transportKeys = []string{"envFile", "transport"}
		return s
	}(),
}

// zed keeps its servers as "context_servers" of its settings: a command
// ("command", "args", which Zed requires even when empty, "env"), or a
// remote server's "url" and "headers". Entries of extensions carry only
// "settings". "source" ("custom", "extension") and "enabled" are the
// host's own and stay.
var zed = &Host{
	ID: "zed", Name: "Zed", HTTP: true,
	files: func(e Env) []File {
		return append([]File{userFile(filepath.Join(e.ConfigHome, "zed", "settings.json"), JSON, at("context_servers"))},
			projectFile(e, filepath.Join(".zed", "settings.json"), JSON, at("context_servers"))...)
	},
	shape: func() shape {
		s := std
		s.typeKey, s.sseTypes, s.cwd = "", nil, ""
		return s
	}(),
	fields: zedFields,
}

// zedFields reads Zed's older entries, whose "command" was an object of
// "path", "args" and "env", as the newer flat ones.
func zedFields(f map[string]any) map[string]any {
	c, ok := f["command"].(map[string]any)
	if !ok {
		return f
	}
	out := make(map[string]any, len(f)+2)
	for k, v := range f {
		out[k] = v
	}
	delete(out, "command")
	if p, ok := c["path"]; ok {
		out["command"] = p
	}
	for _, k := range []string{"args", "env"} {
		if v, ok := c[k]; ok {
			out[k] = v
		}
	}
	return out
}

// geminiShape is Gemini CLI's (and Qwen Code's): "httpUrl" for Streamable
// HTTP, "url" for SSE (unless a "type" of "http" says otherwise). It
// writes no "type": "httpUrl" alone says Streamable HTTP. "oauth" and
// "authProviderType" sign in to a remote server.
var geminiShape = func() shape {
	s := std
	s.url, s.sseURL = "httpUrl", "url"
	s.transportKeys = append(s.transportKeys, "oauth", "authProviderType")
	return s
}()

var gemini = &Host{
	ID: "gemini", Name: "Gemini CLI", HTTP: true,
	files: func(e Env) []File {
		return append([]File{userFile(filepath.Join(e.Home, ".gemini", "settings.json"), JSON, at("mcpServers"))},
			projectFile(e, filepath.Join(".gemini", "settings.json"), JSON, at("mcpServers"))...)
	},
	shape: geminiShape,
}

var qwen = &Host{
	ID: "qwen", Name: "Qwen Code", HTTP: true,
	files: func(e Env) []File {
		return append(append([]File{userFile(filepath.Join(e.Home, ".qwen", "settings.json"), JSON, at("mcpServers"))},
			projectFile(e, filepath.Join(".qwen", "settings.json"), JSON, at("mcpServers"))...),
			projectFile(e, filepath.Join(".qwen", "settings.local.json"), JSON, at("mcpServers"))...)
	},
	shape: geminiShape,
}

// opencode keeps its servers under "mcp" of opencode.json or
// opencode.jsonc, "type" "local" with the whole command line as a list, or
// "remote"; its newer layout puts them under "mcp"."servers". A remote
// server's "oauth" signs in to it.
var opencode = &Host{
	ID: "opencode", Name: "opencode", HTTP: true,
	files: func(e Env) []File {
		dir := filepath.Join(e.ConfigHome, "opencode")
		return append(append([]File{
			userFile(filepath.Join(dir, "config.json"), JSON, opencodeMaps...),
			userFile(filepath.Join(dir, "opencode.json"), JSON, opencodeMaps...),
			userFile(filepath.Join(dir, "opencode.jsonc"), JSON, opencodeMaps...),
		}, projectFile(e, "opencode.json", JSON, opencodeMaps...)...),
			projectFile(e, "opencode.jsonc", JSON, opencodeMaps...)...)
	},
	shape: shape{command: "command", commandList: true, env: "environment", cwd: "cwd", url: "url", headers: "headers",
		typeKey: "type", stdioType: "local", httpType: "remote", transportKeys: []string{"oauth"}},
}

// opencodeMaps are where opencode's servers are: the members of "mcp"
// (but its "servers" object of the newer layout), and those of
// "mcp"."servers".
var opencodeMaps = []serverMap{
	{path: []string{"mcp"}, skip: func(name string, f map[string]any) bool { return name == "servers" && f["type"] == nil }},
	at("mcp", "servers"),
}

// cline keeps its servers in the extension's storage of each editor it is
// installed in, and its command line's in ~/.cline. A remote entry
// without "type" is SSE to Cline, unless its older "transportType" says
// "http".
var cline = &Host{
	ID: "cline", Name: "Cline", HTTP: true,
	files: func(e Env) []File {
		rel := filepath.Join("User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")
		var out []File
		for _, editor := range []string{"Code", "Code - Insiders", "VSCodium", "Cursor"} {
			out = append(out, userFile(filepath.Join(e.ConfigHome, editor, rel), JSON, at("mcpServers")))
		}
		return append(out, userFile(filepath.Join(e.Home, ".cline", "data", "settings", "cline_mcp_settings.json"), JSON, at("mcpServers")))
	},
	shape: func() shape {
		s := withTypes(std, "stdio", "streamableHttp")
		s.transportKeys = append(s.transportKeys, "transportType")
		return s
	}(),
	fields: func(f map[string]any) map[string]any {
		if _, ok := f["url"]; !ok || f["type"] != nil {
			return f
		}
		out := make(map[string]any, len(f)+1)
		for k, v := range f {
			out[k] = v
		}
		out["type"] = "sse"
		if f["transportType"] == "http" {
			out["type"] = "streamableHttp"
		}
		return out
	},
}

var lmStudio = &Host{
	ID: "lm-studio", Name: "LM Studio", HTTP: true,
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.Home, ".lmstudio", "mcp.json"), JSON, at("mcpServers"))}
	},
	shape: std,
}

var copilotCLI = &Host{
	ID: "copilot-cli", Name: "GitHub Copilot CLI", HTTP: true,
	files: func(e Env) []File {
		return []File{userFile(filepath.Join(e.Home, ".copilot", "mcp-config.json"), JSON, at("mcpServers"))}
	},
	shape: withTypes(std, "local", "http"),
}

// vscodeShape is VS Code's: "dev" (watch and debug a server run from
// source) and "sandboxEnabled" and "sandbox" (what a server run as a
// command may reach) belong to a server run as a command.
var vscodeShape = func() shape {
	s := withTypes(std, "stdio", "http")
	s.transportKeys = append(s.transportKeys, "dev", "sandboxEnabled", "sandbox")
	return s
}()

// withTypes is s writing "type": stdio or http.
func withTypes(s shape, stdio, http string) shape {
	s.stdioType, s.httpType = stdio, http
	return s
}
