package importer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// hostVar is one ${...} reference in a host's value.
var hostVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// envVarName is a name mcpd expands as an environment variable.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// convert turns a host's server into an mcpd server: host variables become
// what mcpd expands, and a server of a project runs in the project's
// directory, as the host ran it.
func (im *importer) convert(m serverMap, name string, hs hostServer) Server {
	conv := func(key, v string) string { return im.convVars(m, name, key, v) }
	s := Server{Command: conv("command", hs.Command), Cwd: conv("cwd", hs.Cwd), Disabled: hs.Disabled}
	for i, a := range hs.Args {
		s.Args = append(s.Args, conv(fmt.Sprintf("args[%d]", i), a))
	}
	if len(hs.Env) > 0 {
		keys := make([]string, 0, len(hs.Env))
		for k := range hs.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys) // notes in a stable order
		s.Env = map[string]string{}
		for _, k := range keys {
			s.Env[k] = conv("env."+k, hs.Env[k])
		}
	}
	if ws := m.workspace; ws != "" {
		switch {
		case s.Cwd == "":
			s.Cwd = ws
		case !filepath.IsAbs(s.Cwd) && !strings.HasPrefix(s.Cwd, "${"):
			s.Cwd = filepath.Join(ws, s.Cwd)
		}
		if strings.Contains(s.Command, "/") && !filepath.IsAbs(s.Command) && !strings.HasPrefix(s.Command, "${") {
			s.Command = filepath.Join(ws, s.Command)
		}
	}
	if hs.EnvFile != "" {
		im.notef("%s: key \"envFile\": not supported (mcpd does not read env files); put its variables in \"env\" or in mcpd's environment", serverRef(m, name))
	}
	return s
}

// convVars rewrites the ${...} references of one value (key of server name)
// to what mcpd expands:
//
//	${userHome}                     → ${HOME}
//	${env:NAME}                     → ${NAME}
//	${workspaceFolder}, ${cwd}      → the project directory, else ${HOME}
//	${workspaceFolderBasename}      → its base name, else the home's
//	${pathSeparator}, ${/}          → /
//	${input:ID}                     → ${MCP_INPUT_ID}
//
// ${NAME} and ${NAME:-default} are mcpd's own and kept. Any other host
// variable (${file}, ${config:...}, ${command:...}) is kept and noted: mcpd
// rejects it, so the check after the import lists it.
func (im *importer) convVars(m serverMap, name, key, v string) string {
	ref := fmt.Sprintf("%s: key %q", serverRef(m, name), key)
	return hostVar.ReplaceAllStringFunc(v, func(whole string) string {
		body := whole[2 : len(whole)-1]
		varName, _, _ := strings.Cut(body, ":-")
		switch {
		case body == "userHome":
			return "${HOME}"
		case body == "pathSeparator" || body == "/":
			return "/"
		case strings.HasPrefix(body, "env:") && envVarName.MatchString(body[4:]):
			return "${" + body[4:] + "}"
		case body == "workspaceFolder" || body == "cwd" || strings.HasPrefix(body, "workspaceFolder:"):
			if m.workspace != "" {
				return m.workspace
			}
			im.notef("%s: %s became ${HOME}: mcpd is not tied to a workspace and %s is not in a project; edit it if the server needs another directory", ref, whole, im.file)
			return "${HOME}"
		case body == "workspaceFolderBasename":
			if m.workspace != "" {
				return filepath.Base(m.workspace)
			}
			base := filepath.Base(im.home)
			im.notef("%s: %s became %q (the home directory's name): %s is not in a project; edit it if the server needs another name", ref, whole, base, im.file)
			return base
		case strings.HasPrefix(body, "input:"):
			id := body[len("input:"):]
			env := inputEnvName(id)
			desc := ""
			if d := im.inputs[id]; d != "" {
				desc = fmt.Sprintf(" (%q)", d)
			}
			im.notef("%s: %s%s became ${%s}: set %s in mcpd's environment", ref, whole, desc, env, env)
			return "${" + env + "}"
		case envVarName.MatchString(varName):
			return whole // mcpd's own ${NAME}, ${NAME:-default}
		}
		im.notef("%s: %s is a host variable mcpd cannot expand; replace it with a value or an environment variable ${NAME}", ref, whole)
		return whole
	})
}

// inputEnvName is the environment variable a VS Code input ID becomes:
// "gh-token" → MCP_INPUT_GH_TOKEN.
func inputEnvName(id string) string {
	b := []byte(strings.ToUpper(id))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return "MCP_INPUT_" + string(b)
}
