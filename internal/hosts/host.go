package hosts

import (
	"os"
	"path/filepath"
)

// A Host is one MCP host application: where its config files are and how
// it writes its servers.
type Host struct {
	// ID names the host on the command line ("claude-code").
	ID string
	// Name is the host's own name ("Claude Code").
	Name string
	// HTTP is set when the host reaches Streamable HTTP servers by URL;
	// a host without it runs every server as a command (mcpdctl bridge).
	HTTP bool
	// Processes are the executable names of the host whose running copy
	// rewrites the config file on exit, so connect must not edit it under
	// them.
	Processes []string
	files     func(Env) []File
	shape     shape
	// fields, if set, turns an entry's fields into the shape's before
	// they are decoded: an older layout the host still reads (Zed's
	// {"command": {"path", "args", "env"}}), a transport it implies. It
	// returns a copy; the entry is rewritten as it stands in the file.
	fields func(map[string]any) map[string]any
}

// An Env is where a user's files are.
type Env struct {
	Home string
	// ConfigHome is $XDG_CONFIG_HOME, else ~/.config.
	ConfigHome string
	// CodexHome is $CODEX_HOME, Codex's directory, "" for ~/.codex.
	CodexHome string
	// Project is a project directory whose project-level files count
	// too (--project), "" for the user's files only.
	Project string
}

// UserEnv is the Env of the current user, with project dir.
func UserEnv(project string) (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, err
	}
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" || !filepath.IsAbs(cfg) {
		cfg = filepath.Join(home, ".config")
	}
	codexHome := os.Getenv("CODEX_HOME")
	if codexHome != "" {
		if codexHome, err = filepath.Abs(codexHome); err != nil {
			return Env{}, err
		}
	}
	if project != "" {
		if project, err = filepath.Abs(project); err != nil {
			return Env{}, err
		}
	}
	return Env{Home: home, ConfigHome: cfg, CodexHome: codexHome, Project: project}, nil
}

// A File is one config file of a host.
type File struct {
	Path   string
	Format Format
	// Scope is "user", or "project" for a project's file.
	Scope string
	// Workspace is the project directory the file's servers run in, ""
	// when they are the user's.
	Workspace string
	maps      []serverMap
}

// Files are the config files h may have in env, whether or not they exist.
func (h *Host) Files(env Env) []File { return h.files(env) }

// Find returns the host with id, or nil.
func Find(id string) *Host {
	for _, h := range All() {
		if h.ID == id {
			return h
		}
	}
	return nil
}

// userFile is a file of the user's with the servers at maps.
func userFile(path string, format Format, maps ...serverMap) File {
	return File{Path: path, Format: format, Scope: "user", maps: maps}
}

// projectFile is a project's file, when env names a project.
func projectFile(env Env, rel string, format Format, maps ...serverMap) []File {
	if env.Project == "" {
		return nil
	}
	return []File{{Path: filepath.Join(env.Project, rel), Format: format, Scope: "project", Workspace: env.Project, maps: maps}}
}

func at(path ...string) serverMap { return serverMap{path: path} }
