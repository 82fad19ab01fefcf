package hosts

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// workspaceVars are the host variables that name the project a server
// runs in (VS Code's and Cursor's).
var workspaceVars = []string{"${workspaceFolder}", "${workspaceRoot}"}

// Root is the workspace root e's server is tied to: the project
// directory its command line, environment or working directory names, or
// the host's ${workspaceFolder} variable, which the host fills in when it
// runs the bridge. It is "" for a server any project can share.
func (e *Entry) Root() string {
	s := e.Server
	vals := append([]string{s.Cwd}, s.Args...)
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		vals = append(vals, s.Env[k])
	}
	for _, v := range vals {
		for _, wv := range workspaceVars {
			if strings.Contains(v, wv) {
				return wv
			}
		}
		if e.Workspace != "" && names(v, e.Workspace) {
			return e.Workspace
		}
	}
	return ""
}

// names reports whether v is dir or a path below it.
func names(v, dir string) bool {
	dir = filepath.Clean(dir)
	return v == dir || strings.HasPrefix(v, dir+string(filepath.Separator))
}

// Untied is e's server with its workspace root made relative: the root
// becomes ".", a path below it "./sub", so that the same server of two
// projects is one server of mcpd, run once per root in that root.
func (e *Entry) Untied() Server {
	root := e.Root()
	if root == "" {
		return e.Server
	}
	s := e.Server
	rel := func(v string) string {
		if strings.HasPrefix(root, "${") {
			return strings.ReplaceAll(v, root, ".")
		}
		if v == filepath.Clean(root) {
			return "."
		}
		if names(v, root) {
			return "." + v[len(filepath.Clean(root)):]
		}
		return v
	}
	s.Args = slices.Clone(s.Args)
	for i, a := range s.Args {
		s.Args[i] = rel(a)
	}
	if s.Env != nil {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			env[k] = rel(v)
		}
		s.Env = env
	}
	s.Cwd = rel(s.Cwd)
	if s.Cwd == "." {
		s.Cwd = ""
	}
	return s
}
