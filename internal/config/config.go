// Package config owns mcpd's config file: its JSON schema, loading and
// validation into Config, and watching the file for changes (Watcher).
//
// # File format
//
// The file is a JSON object. Servers are declared under "mcpServers" (the
// shape Claude Desktop, Cursor and most MCP hosts use), or under "servers"
// (VS Code's mcp.json), so users can paste what they already have:
//
//	{
//	  "mcpServers": {
//	    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//	               "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "autostart": true}
//	  }
//	}
//
// Both keys may be present; their servers are merged, and a name defined under
// both is an error. The top-level key "httpListen" is mcpd's HTTP face and
// "profiles" its per-client views of the servers (profiles.go), "registry" the
// MCP Registry mcpdctl adds servers from; "$schema" and
// "inputs" (VS Code) are ignored; any other top-level key is an error.
//
// Per server, beside "command" (required), "args", "env" and "cwd", mcpd reads
// "protocol" (auto|modern|legacy, default auto), "autostart" (default false),
// "restart" (on-failure|always|never, default on-failure), "requestTimeout",
// "shutdownGrace" (default 2s), "discoverTimeout" (default 3s), "disabled",
// "maxLineSize" (bytes), "cache" (see Server.Cache), "roots", "sampling",
// "elicitation" (forwarding of the child's requests to hosts, default true)
// "idleTimeout" (see Server.IdleTimeout; 0 or absent: never),
// "stdinTimeout" (default 10s), "sandbox" (see sandbox.go), "pin"
// (off|warn|enforce, default warn; see Server.Pin) and "clientCapabilities"
// (see ClientCaps). Durations are Go duration strings ("1.5s", "500ms")
// or integer milliseconds (1500), and must be positive and at most what a
// Go duration holds (2562047h47m16.854775807s, 9223372036854 ms). VS Code's
// "type": "stdio" is accepted. Unknown keys, wrong types and duplicate
// keys are problems, so typos do not go unnoticed.
//
// A remote server has "url" (http:// or https://) instead of "command",
// "type" "http" (Streamable HTTP, the default) or "sse" (the 2024-11-05
// HTTP+SSE transport), "headers" (variables expanded; the values are never
// logged) and "oauth" ({"clientId", "clientSecret", "scopes",
// "redirectPort"}); see remote.go. Mixing "command" and "url" is a problem
// of the server, and so are the command's keys ("args", "env", "cwd",
// "stdinTimeout") on a remote server.
//
// # Problems
//
// A problem inside one server (a bad key or value, an unset variable, and,
// with CheckCommands, a command that cannot run) is that server's: Parse
// returns it with Server.Invalid set and the others usable. Only a file
// that cannot be used as a whole (a syntax error, not an object, an unknown
// top-level key, an invalid server name) is an error of Parse.
//
// # Paths
//
// A relative "command" that contains a slash ("./bin/server", "bin/server")
// and a relative "cwd" are resolved against the directory of the config file,
// not mcpd's working directory, so a config works the same wherever mcpd is
// started from. A command without a slash ("npx", "uvx") is looked up in PATH
// when the server starts. "~" is not expanded; write "${HOME}/...".
//
// # Variables
//
// In "command", "args", "cwd" and the values of "env", ${NAME} is replaced by
// the value of the environment variable NAME of the mcpd process, and
// ${NAME:-default} by its value, or by default if it is unset or empty.
// ${env:NAME} is accepted as a synonym of ${NAME} (VS Code's spelling). An
// unset variable without a default is a problem of its server, naming it.
// "$${" yields a literal "${"; every other "$" is kept as is ("$HOME" is not
// expanded). Variables are expanded once, when the file is loaded or
// reloaded; those of a disabled server are checked but not expanded.
//
// In "args", the values of "env" and the values of "headers",
// ${secret:NAME} names a secret (mcpdctl secret set NAME; internal/secrets).
// Parse keeps the reference as it is in the Server, and the supervisor
// resolves it (ResolveSecrets) each time the server starts, so a secret's
// value is never in a Config. A value that would otherwise hold a literal
// "${secret:" is a problem; a reference anywhere else is one too.
package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/profile"
	sandbox "github.com/mcpd-dev/mcpd/internal/sandbox/policy"
)

// Defaults applied by Parse to servers that do not set the key.
const (
	DefaultProtocol        = "auto"
	DefaultRestart         = "on-failure"
	DefaultShutdownGrace   = 2 * time.Second
	DefaultDiscoverTimeout = 3 * time.Second
	DefaultStdinTimeout    = 10 * time.Second
)

// Config is a parsed, validated config file.
type Config struct {
	// Path is the file the config was read from, as given to Load or Parse.
	Path string
	// Servers holds every declared server, disabled ones included, sorted
	// by name.
	Servers []Server
	// Data is the file content Servers were parsed from. NewWatcher uses it
	// to tell a real change from a save of identical bytes.
	Data []byte
	// Problems are the problems of single servers, in file order; each such
	// server is in Servers with Invalid set, and the others are usable.
	Problems []*Error
	// HTTPListen is the top-level key "httpListen": where mcpd serves MCP
	// hosts over Streamable HTTP (a loopback HOST:PORT, unix:/path, or
	// "off"); "" when the file does not set it. mcpd --http-listen wins
	// over it. The address itself is checked by mcpd.
	HTTPListen string
	// Profiles is the top-level key "profiles" (profiles.go); nil when the
	// file has none.
	Profiles profile.Set
	// Audit is the top-level "audit" object (audit.go); nil when the file
	// does not set it (DefaultAudit applies).
	Audit *Audit
	// Registry is the top-level key "registry": the MCP Registry mcpdctl's
	// search, add and outdated use; "" when the file does not set it. mcpd
	// itself does not read it.
	Registry string
	// Dashboard is the top-level key "dashboard": false turns off the live
	// page mcpd serves at / on its HTTP face (the face itself, /mcp and
	// /servers/NAME/mcp, stays). Nil when the file does not set it: on.
	Dashboard *bool
}

// DashboardOn reports whether the config leaves mcpd's dashboard on (the
// default); a nil Config does.
func (c *Config) DashboardOn() bool { return c == nil || c.Dashboard == nil || *c.Dashboard }

// Server is one declared MCP server. Its fields are in the same order and of
// the same types as supervisor.Spec, so a Server converts to a Spec with a
// plain type conversion; keep the two in step.
type Server struct {
	// Name is the key of the server in the file: non-empty, only
	// [A-Za-z0-9_.-], and never containing "__" (the separator of
	// aggregated tool names).
	Name string
	// Command is the program to run, with variables expanded. If it
	// contains a slash it is absolute (relative ones are resolved against
	// the config file's directory); otherwise it is looked up in PATH.
	Command string
	// Args are the program's arguments, with variables expanded.
	Args []string
	// Env is merged over mcpd's environment, with variables expanded in the
	// values. Nil when the file sets none.
	Env map[string]string
	// Cwd is the working directory, absolute; "" means mcpd's own.
	Cwd string
	// Protocol is "auto" (the default), "modern" or "legacy".
	Protocol string
	// Autostart starts the server when mcpd starts rather than on first use.
	Autostart bool
	// Restart is "on-failure" (the default), "always" or "never".
	Restart string
	// RequestTimeout is the default request deadline. Zero means the key was
	// not set and the supervisor's default applies.
	RequestTimeout time.Duration
	// ShutdownGrace is each wait of the stop sequence; 2s if not set.
	ShutdownGrace time.Duration
	// DiscoverTimeout bounds the server/discover probe; 3s if not set.
	DiscoverTimeout time.Duration
	// MaxLineSize caps one stdout line in bytes. Zero means not set and the
	// default (32 MiB) applies.
	MaxLineSize int
	// Disabled servers are kept in the config but never started.
	Disabled bool
	// Cache is the result cache policy (key "cache"): "" when not set
	// (results are kept only as long as the server itself promises: ttlMs,
	// change notifications), a duration normalized by time.Duration.String
	// ("30s", or integer milliseconds in the file) that keeps results that
	// long when the server promises nothing longer, "never" (no caching, no
	// coalescing) or "always" (until a change notification, restart, reload
	// or mcpdctl cache clear).
	Cache string
	// Roots, Sampling and Elicitation (keys "roots", "sampling",
	// "elicitation") say whether mcpd declares that client capability to a
	// legacy child at initialize and forwards the child's roots/list,
	// sampling/createMessage and elicitation/create requests to an app
	// registered as host (e.g. mcpdctl bridge). Nil when not set: on.
	Roots       *bool
	Sampling    *bool
	Elicitation *bool
	// RootPaths (key "roots" given as an array: Roots is then on) are the
	// clean absolute directories mcpd answers roots/list with when no host
	// app answers it; with "roots": true there are none and that answer is
	// an empty list.
	RootPaths []string
	// IdleTimeout (key "idleTimeout") stops the server's child once it has
	// had no request in flight and no app subscription for that long; the
	// next request starts it again. Zero (not set, or 0): never. It has no
	// effect on a server with autostart or restart "always", which are
	// kept running.
	IdleTimeout time.Duration
	// StdinTimeout (key "stdinTimeout") is how long the server may leave
	// its stdin unread while mcpd has a message for it before it counts as
	// hung: it is killed and restarted like a crash. 10s if not set.
	StdinTimeout time.Duration
	// Remote, when set, is a server reached over HTTP (keys "url",
	// "type", "headers", "oauth"; remote.go) instead of a command.
	Remote *Remote
	// Sandbox (key "sandbox", Linux) confines the server: nil when not set
	// or false; see sandbox.go.
	Sandbox *sandbox.Policy
	// Invalid is why the server cannot run, its problems in the file joined
	// with "; " ("env.TOKEN: ${TOKEN} is not set ..."); "" when it has none.
	// The other fields hold what could be read.
	Invalid string
	// Pin (key "pin") is the tool pinning mode: "off", "warn" or
	// "enforce"; "" when not set, which is pin.DefaultMode ("warn"). See
	// pin.go.
	Pin string
	// Share (key "share") is how many children serve the apps: "global"
	// (one for all; "" when not set means the same), "client" (one per
	// connected app identity) or "root" (one per workspace root, started
	// with that root as its working directory). See share.go.
	Share string
	// MaxInstances (key "maxInstances") caps the instances of a shared
	// server; 0: no cap.
	MaxInstances int
	// ClientCapabilities (key "clientCapabilities") adds to and removes
	// from what mcpd declares to a legacy server at initialize; nil when
	// not set. See clientcaps.go.
	ClientCapabilities *ClientCaps
}

// Load reads the config file at path with ReadFile, bounded in size and
// time and abandoned when ctx is done, and parses it. If the file does not
// exist the error wraps fs.ErrNotExist, so the caller can run with no
// servers and say where the file belongs.
func Load(ctx context.Context, path string) (*Config, error) {
	data, err := ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses and validates data as the content of the config file at path.
// path names the file in errors and is the base of relative commands and
// working directories. Variables are expanded from the process environment,
// except in disabled servers (checked, not expanded).
//
// A problem inside one server (a bad key or value, an unset variable) does
// not fail the file: the server is returned with Invalid set and the problem
// in Config.Problems. Only a file that cannot be used as a whole (a syntax
// error, not an object, an unknown top-level key, a server map that is not
// an object, an invalid or duplicate server name) is an error; it then
// reports every problem found, each as an *Error, joined. Data of more than
// MaxFileSize bytes is refused (ErrTooLarge), as ReadFile refuses such a
// file.
func Parse(path string, data []byte) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("config %s: %w: %d bytes, more than the limit of 4 MiB", path, ErrTooLarge, len(data))
	}
	p := &parser{path: path, lookup: os.LookupEnv}
	servers := p.parse(data)
	if p.fatal {
		errs := make([]error, len(p.errs))
		for i, e := range p.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	return &Config{Path: path, Servers: servers, Data: bytes.Clone(data), Problems: p.errs, HTTPListen: p.httpListen, Profiles: p.profileSet, Audit: p.auditCfg, Registry: p.registry, Dashboard: p.dashboard}, nil
}

// The two keys a server map may sit under.
const (
	keyMCPServers = "mcpServers"
	keyServers    = "servers"
)

// topKeys are the keys allowed at the top level (keys.go).
var topKeys = keysIn(InTop)

// keyRegistry is the top-level key of the MCP Registry "mcpdctl search",
// "add" and "outdated" read.
const keyRegistry = "registry"

// keyHTTPListen is the top-level key of mcpd's HTTP face address.
const keyHTTPListen = "httpListen"

// keyDashboard is the top-level key that turns the dashboard off.
const keyDashboard = "dashboard"

// serverKeys are the keys allowed in a server object (keys.go).
var serverKeys = keysIn(InServer)

var (
	protocols = []string{"auto", "modern", "legacy"}
	restarts  = []string{"on-failure", "always", "never"}
)

// utf8BOM is skipped at the start of the file (Windows editors write it).
var utf8BOM = []byte("\xef\xbb\xbf")

type parser struct {
	path   string
	lookup func(string) (string, bool)
	errs   []*Error
	// fatal: a problem of the file as a whole was found (failFile).
	fatal bool
	// noExpand: the server being parsed is disabled; its variables are
	// checked but not expanded.
	noExpand bool
	base     string // directory relative paths are resolved against; set lazily
	// httpListen is the value of the top-level "httpListen".
	httpListen string
	// profileSet is the top-level "profiles", parsed once the servers are.
	profileSet profile.Set
	// auditCfg is the top-level "audit" (audit.go); nil when not set.
	auditCfg *Audit
	// registry is the top-level "registry".
	registry string
	// dashboard is the top-level "dashboard"; nil when not set.
	dashboard *bool
}

// fail records a problem; one outside any server is a problem of the file.
func (p *parser) fail(server, key, format string, args ...any) {
	p.errs = append(p.errs, &Error{Path: p.path, Server: server, Key: key, Msg: fmt.Sprintf(format, args...)})
	if server == "" {
		p.fatal = true
	}
}

// failFile records a problem of the file as a whole that names a server.
func (p *parser) failFile(server, key, format string, args ...any) {
	p.fail(server, key, format, args...)
	p.fatal = true
}

// parse parses data, the file's content, into its servers sorted by name,
// recording the top-level settings in p and every problem in p.errs.
func (p *parser) parse(data []byte) []Server {
	top, ok := p.topLevel(data)
	if !ok {
		return nil
	}
	var servers []Server
	var profilesRaw json.RawMessage
	from := map[string]string{} // server name → the key it was declared under
	for _, m := range top {
		if !slices.Contains(topKeys, m.key) {
			p.fail("", "", "unknown key %q%s", m.key, suggest(m.key, topKeys))
			continue
		}
		switch m.key {
		case keyMCPServers, keyServers:
			servers = p.serverMap(m, from, servers)
		case keyHTTPListen:
			p.parseHTTPListen(m.val)
		case keyProfiles:
			profilesRaw = m.val
		case keyAudit:
			a := p.audit(m.val)
			p.auditCfg = &a
		case keyRegistry:
			p.parseRegistry(m.val)
		case keyDashboard:
			p.parseDashboard(m.val)
		case "$schema", "inputs":
			// Ignored: "$schema" points editors at a schema, "inputs" are
			// VS Code's prompts for ${input:...} values.
		default:
			p.fail("", "", "unknown key %q%s", m.key, suggest(m.key, topKeys))
		}
	}
	slices.SortFunc(servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	if profilesRaw != nil {
		p.profileSet = p.profiles(profilesRaw, servers)
	}
	return servers
}

// topLevel is the members of the file's top-level object, read from data
// without a leading BOM and, when it is not standard JSON, without
// comments and trailing commas. An empty file, a syntax error (with its
// position) or a top level that is not an object is a problem of the file.
func (p *parser) topLevel(data []byte) ([]member, bool) {
	data = bytes.TrimPrefix(data, utf8BOM)
	// Standard JSON (the usual file) is checked once here and then split
	// without further checks (jsonscan.go); only a file that is not is
	// standardized first (comments, trailing commas).
	valid := json.Valid(data)
	if !valid {
		data = StripJSONComments(data)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		p.fail("", "", "file is empty, want a JSON object")
		return nil, false
	}
	if !valid && !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v) // for the error's position
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := Position(data, se.Offset)
			p.errs = append(p.errs, &Error{Path: p.path, Line: line, Column: col, Msg: se.Error()})
			p.fatal = true
		} else {
			p.fail("", "", "%v", err)
		}
		return nil, false
	}
	return p.object(data, "", "", "the top level")
}

// serverMap appends to servers those of the server map m ("mcpServers" or
// "servers") that parse; from records the map each name was declared in,
// and a name declared in both maps is a problem of the file.
func (p *parser) serverMap(m member, from map[string]string, servers []Server) []Server {
	members, ok := p.object(m.val, "", m.key, "")
	if !ok {
		return servers
	}
	servers = slices.Grow(servers, len(members))
	for _, sm := range members {
		// Duplicates inside one map were already reported by object.
		if _, dup := from[sm.key]; dup {
			p.failFile(sm.key, "", "defined in both %q and %q", keyMCPServers, keyServers)
			continue
		}
		from[sm.key] = m.key
		if s, ok := p.server(m.key, sm.key, sm.val); ok {
			servers = append(servers, s)
		}
	}
	return servers
}

// parseHTTPListen sets p.httpListen from the top-level "httpListen": a
// non-empty string.
func (p *parser) parseHTTPListen(val json.RawMessage) {
	if err := json.Unmarshal(val, &p.httpListen); err != nil || strings.TrimSpace(p.httpListen) == "" {
		p.fail("", keyHTTPListen, "want a non-empty string: a loopback HOST:PORT such as \"127.0.0.1:6273\", \"unix:/path/to.sock\" or \"off\"")
		p.httpListen = ""
	}
}

// parseRegistry sets p.registry from the top-level "registry": an http://
// or https:// URL.
func (p *parser) parseRegistry(val json.RawMessage) {
	var u string
	if err := json.Unmarshal(val, &u); err != nil || !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) {
		p.fail("", keyRegistry, "want the MCP Registry's http:// or https:// URL, such as \"https://registry.modelcontextprotocol.io\"")
		return
	}
	p.registry = u
}

// parseDashboard sets p.dashboard from the top-level "dashboard": a
// boolean.
func (p *parser) parseDashboard(val json.RawMessage) {
	var on bool
	if err := json.Unmarshal(val, &on); err != nil {
		p.fail("", keyDashboard, "want true or false (false turns off the page mcpd serves at / on its HTTP face)")
		return
	}
	p.dashboard = &on
}
