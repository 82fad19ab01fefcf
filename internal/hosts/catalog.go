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
	shape: withTypes(std, "stdio", "http"),
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

// zed's entries are reached as commands: "mcpdctl bridge" keeps working
// in every Zed version that has context servers.
var zed = &Host{
	ID: "zed", Name: "Zed",
	files: func(e Env) []File {
		return append([]File{userFile(filepath.Join(e.ConfigHome, "zed", "settings.json"), JSON, at("context_servers"))},
			projectFile(e, filepath.Join(".zed", "settings.json"), JSON, at("context_servers"))...)
	},
	shape: std,
}

// geminiShape is Gemini CLI's (and Qwen Code's): "httpUrl" for Streamable
// HTTP, "url" for SSE.
var geminiShape = func() shape {
	s := std
	s.url, s.sseURL, s.typeKey = "httpUrl", "url", ""
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
		return append([]File{userFile(filepath.Join(e.Home, ".qwen", "settings.json"), JSON, at("mcpServers"))},
			projectFile(e, filepath.Join(".qwen", "settings.json"), JSON, at("mcpServers"))...)
	},
	shape: geminiShape,
}

var opencode = &Host{
	ID: "opencode", Name: "opencode", HTTP: true,
	files: func(e Env) []File {
		dir := filepath.Join(e.ConfigHome, "opencode")
		return append([]File{
			userFile(filepath.Join(dir, "opencode.json"), JSON, at("mcp")),
			userFile(filepath.Join(dir, "opencode.jsonc"), JSON, at("mcp")),
		}, projectFile(e, "opencode.json", JSON, at("mcp"))...)
	},
	shape: shape{command: "command", commandList: true, env: "environment", url: "url", headers: "headers",
		typeKey: "type", stdioType: "local", httpType: "remote"},
}

var cline = &Host{
	ID: "cline", Name: "Cline", HTTP: true,
	files: func(e Env) []File {
		rel := filepath.Join("User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")
		return []File{userFile(filepath.Join(e.ConfigHome, "Code", rel), JSON, at("mcpServers"))}
	},
	shape: withTypes(std, "stdio", "streamableHttp"),
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
// source) belongs to a server run as a command.
var vscodeShape = func() shape {
	s := withTypes(std, "stdio", "http")
	s.transportKeys = append(s.transportKeys, "dev")
	return s
}()

// withTypes is s writing "type": stdio or http.
func withTypes(s shape, stdio, http string) shape {
	s.stdioType, s.httpType = stdio, http
	return s
}
