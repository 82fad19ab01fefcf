// Package importer turns the MCP servers other hosts declare into mcpd
// servers: the conversion of a host's config file ("mcpdctl config
// import"), the literal secrets found on the way (SecretMover), the merge
// into mcpd's config keeping its comments, and connect's plan for a host's
// files (PlanHost): which entries become which mcpd servers and how the
// host then reaches them. It reads and returns bytes and lines of text;
// writing the files and printing is its caller's.
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// Server is one server of an mcpd config written by config import.
type Server struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// URL, Type and Headers are a remote server's (import_remote.go).
	URL      string            `json:"url,omitempty"`
	Type     string            `json:"type,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
	// Share is "root" for a server connect found tied to a workspace.
	Share string `json:"share,omitempty"`
}

// hostServer is a server as MCP hosts write it: the keys of Claude Desktop,
// Claude Code, Cursor, VS Code, Windsurf and Zed that matter.
type hostServer struct {
	Type, Command, Cwd, EnvFile string
	Args                        []string
	Env                         map[string]string
	Disabled                    bool
	// Remote is the key that makes it a remote server ("url", "serverUrl",
	// "type"), if any.
	Remote string
	// URL is the remote server's "url" or "serverUrl", if any.
	URL string
	// Headers are a remote server's HTTP headers.
	Headers map[string]string
	// Extension is set for a Zed entry provided by a Zed extension.
	Extension bool
}

// serverMap is one map of servers found in a host's file.
type serverMap struct {
	// where names the map in messages ("mcpServers",
	// `projects["/home/u/app"].mcpServers`).
	where string
	// workspace is the project directory the host runs these servers in,
	// "" when the map is not tied to one.
	workspace string
	zed       bool
	raw       json.RawMessage
}

// Result is a converted config.
type Result struct {
	// Servers are the mcpd servers, by name.
	Servers map[string]Server
	// Notes say what was left out or changed, in order.
	Notes []string
}

// importer converts one host file.
type importer struct {
	file   string            // the file imported, absolute
	home   string            // the user's home directory, "" if unknown
	inputs map[string]string // VS Code input id → its description
	res    Result
	from   map[string]string // imported name → where it came from
}

// Convert converts the MCP servers of a Claude Desktop, Claude Code,
// Cursor, VS Code, Windsurf or Zed config file (data, read from file) to
// mcpd servers, and says what it had to leave out or change.
func Convert(file string, data []byte) (*Result, error) {
	std := config.StripJSONComments(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if err := json.Unmarshal(std, new(any)); err != nil {
		return nil, syntaxError(std, err)
	}
	top, err := objectMembers(std, "the file")
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	im := &importer{file: abs, home: home, from: map[string]string{},
		res: Result{Servers: map[string]Server{}}}
	if err := im.readInputs(top["inputs"]); err != nil {
		return nil, err
	}
	maps, err := im.serverMaps(top)
	if err != nil {
		return nil, err
	}
	if len(maps) == 0 {
		return nil, errors.New(`no MCP servers found: want "mcpServers" (Claude Desktop, Claude Code, Cursor, Windsurf), "servers" or "mcp.servers" (VS Code) or "context_servers" (Zed)`)
	}
	for _, m := range maps {
		if err := im.importMap(m); err != nil {
			return nil, err
		}
	}
	return &im.res, nil
}

// serverMaps finds the maps of servers in a host file's top-level object.
func (im *importer) serverMaps(top map[string]json.RawMessage) ([]serverMap, error) {
	ws := im.workspaceOf()
	var maps []serverMap
	for _, key := range []string{"mcpServers", "servers"} {
		if raw, ok := top[key]; ok {
			maps = append(maps, serverMap{where: key, workspace: ws, raw: raw})
		}
	}
	if raw, ok := top["mcp"]; ok { // VS Code settings.json
		mcp, err := objectMembers(raw, `"mcp"`)
		if err != nil {
			return nil, err
		}
		if s, ok := mcp["servers"]; ok {
			maps = append(maps, serverMap{where: "mcp.servers", workspace: ws, raw: s})
		}
		if err := im.readInputs(mcp["inputs"]); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["context_servers"]; ok { // Zed settings.json
		maps = append(maps, serverMap{where: "context_servers", workspace: ws, zed: true, raw: raw})
	}
	if raw, ok := top["projects"]; ok { // Claude Code's ~/.claude.json
		projects, err := objectMembers(raw, `"projects"`)
		if err != nil {
			return nil, err
		}
		dirs := make([]string, 0, len(projects))
		for dir := range projects {
			dirs = append(dirs, dir)
		}
		sort.Strings(dirs)
		for _, dir := range dirs {
			where := fmt.Sprintf("projects[%q]", dir)
			p, err := objectMembers(projects[dir], where)
			if err != nil {
				return nil, err
			}
			if s, ok := p["mcpServers"]; ok {
				maps = append(maps, serverMap{where: where + ".mcpServers", workspace: dir, raw: s})
			}
		}
	}
	return maps, nil
}

// workspaceOf infers the project directory of im.file: the directory
// holding a project's .vscode/mcp.json or .cursor/mcp.json, or a Claude
// Code .mcp.json. It is "" for a file that is not in a project (the
// home directory's ~/.cursor/mcp.json is Cursor's global config).
func (im *importer) workspaceOf() string {
	dir := filepath.Dir(im.file)
	ws := ""
	switch {
	case filepath.Base(im.file) == "mcp.json" && slices.Contains([]string{".vscode", ".cursor"}, filepath.Base(dir)):
		ws = filepath.Dir(dir)
	case filepath.Base(im.file) == ".mcp.json":
		ws = dir
	}
	if ws == "" || (im.home != "" && filepath.Clean(ws) == filepath.Clean(im.home)) {
		return ""
	}
	return ws
}

// readInputs records the descriptions of VS Code's "inputs".
func (im *importer) readInputs(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	if k := jsonKind(raw); k != "an array" {
		return fmt.Errorf(`"inputs" must be an array, not %s`, k)
	}
	var inputs []struct {
		ID          any `json:"id"`
		Description any `json:"description"`
	}
	if json.Unmarshal(raw, &inputs) != nil {
		return errors.New(`"inputs" must be an array of objects`)
	}
	if im.inputs == nil {
		im.inputs = map[string]string{}
	}
	for _, in := range inputs {
		id, _ := in.ID.(string)
		desc, _ := in.Description.(string)
		if id != "" {
			im.inputs[id] = desc
		}
	}
	return nil
}

// importMap converts the servers of one map, in name order.
func (im *importer) importMap(m serverMap) error {
	members, err := objectMembers(m.raw, fmt.Sprintf("%q", m.where))
	if err != nil {
		return err
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		hs, err := decodeHostServer(m.where, name, members[name], m.zed)
		if err != nil {
			return err
		}
		if !im.importable(m, name, hs) {
			continue
		}
		if hs.Remote != "" {
			im.add(m, name, im.convertRemote(m, name, hs)) // import_remote.go
			continue
		}
		im.add(m, name, im.convert(m, name, hs))
	}
	return nil
}

// importable reports whether hs can run under mcpd, noting why not.
func (im *importer) importable(m serverMap, name string, hs hostServer) bool {
	why := ""
	switch {
	case isOwnHTTPFace(hs.URL):
		why = "it is mcpd's own HTTP face; importing it would make mcpd call itself"
	case hs.Remote != "":
		if why = remoteSkip(hs); why == "" { // import_remote.go
			return true
		}
	case hs.Extension:
		why = "it is provided by a Zed extension, which only Zed can run; declare its command instead"
	case hs.Command == "":
		why = "it has no command"
	case isBridge(hs):
		why = "it is already mcpd's (mcpdctl bridge)"
	default:
		return true
	}
	im.notef("%s: skipped: %s", serverRef(m, name), why)
	return false
}

// add records s under name, renamed when mcpd does not allow the name or
// another map of the file already used it.
func (im *importer) add(m serverMap, name string, s Server) {
	out := ServerName(name)
	if prev, dup := im.from[out]; dup {
		if sameServer(im.res.Servers[out], s) {
			return
		}
		base := out
		for i := 2; ; i++ {
			if _, taken := im.from[out]; !taken {
				break
			}
			out = fmt.Sprintf("%s-%d", base, i)
		}
		im.notef("%s: imported as %q: %q is the server of %s", serverRef(m, name), out, base, prev)
	} else if out != name {
		im.notef("%s: imported as %q: mcpd names use only letters, digits, \"_\", \".\" and \"-\", without \"__\"", serverRef(m, name), out)
	}
	im.from[out] = fmt.Sprintf("%q in %s", name, m.where)
	im.res.Servers[out] = s
}

func sameServer(a, b Server) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// ServerName turns a host's server name into one mcpd accepts.
func ServerName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	out := string(b)
	for strings.Contains(out, "__") {
		out = strings.ReplaceAll(out, "__", "_")
	}
	if out == "" {
		return "server"
	}
	return out
}

// serverRef names a server of the imported file in messages.
func serverRef(m serverMap, name string) string {
	if m.where == "mcpServers" || m.where == "servers" || m.where == "context_servers" {
		return fmt.Sprintf("server %q", name)
	}
	return fmt.Sprintf("server %q of %s", name, m.where)
}

func (im *importer) notef(format string, args ...any) {
	im.res.Notes = append(im.res.Notes, fmt.Sprintf(format, args...))
}

// isBridge reports whether s runs mcpdctl's bridge, i.e. is a host's entry
// for a server mcpd already serves: importing it would make mcpd bridge
// into itself.
// mcpdHTTPPort is the port of mcpd's HTTP face by default.
const mcpdHTTPPort = "6273"

// isOwnHTTPFace reports whether u is an endpoint of mcpd's HTTP face at
// its default address: a loopback http URL on port 6273 whose path is /mcp
// or /servers/NAME/mcp. (Another local server on another port is a remote
// server like any other.)
func isOwnHTTPFace(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "http" || p.Port() != mcpdHTTPPort {
		return false
	}
	host := p.Hostname()
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return false
	}
	path := strings.TrimSuffix(p.Path, "/")
	if path == "/mcp" {
		return true
	}
	name, ok := strings.CutPrefix(path, "/servers/")
	name, ok2 := strings.CutSuffix(name, "/mcp")
	return ok && ok2 && name != "" && !strings.Contains(name, "/")
}

func isBridge(s hostServer) bool {
	return strings.TrimSuffix(filepath.Base(s.Command), ".exe") == "mcpdctl" && slices.Contains(s.Args, "bridge")
}

// MarshalIndent is indented JSON without HTML escaping, with a
// final newline.
func MarshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
