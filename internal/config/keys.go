package config

import "slices"

// Key documents one key of the config file. The table below is the one
// list of the keys there are: the parser refuses a key that is not in it
// as unknown (with a suggestion from it), and docs/configuration.md's key
// table is generated from it.
type Key struct {
	// In is the object the key sits in: "" for the top level, "server"
	// for a server, "server.oauth", "server.sandbox",
	// "server.sandbox.limits" or "audit".
	In string
	// Name is the key as the file spells it.
	Name string
	// Type is its JSON type as the parser reads it.
	Type string
	// Default is what applies when the key is absent.
	Default string
	// Doc says in one line what it does.
	Doc string
}

// The objects keys sit in (Key.In).
const (
	InTop     = ""
	InServer  = "server"
	InOAuth   = "server.oauth"
	InSandbox = "server.sandbox"
	InLimits  = "server.sandbox.limits"
	InAudit   = "audit"
)

const durationType = `duration ("30s" or milliseconds)`

var keys = []Key{
	{InTop, keyMCPServers, "object of servers", "none", "the servers by name (Claude Desktop's and Cursor's shape)"},
	{InTop, keyServers, "object of servers", "none", "the servers by name (VS Code's shape); merged with mcpServers, a name in both is an error"},
	{InTop, keyHTTPListen, "string", `"127.0.0.1:6273"`, `where mcpd serves MCP hosts over Streamable HTTP: a loopback HOST:PORT, unix:/path or "off"; --http-listen wins`},
	{InTop, keyProfiles, "object of profiles", "none", "per-client views of the servers (see profiles.md)"},
	{InTop, keyAudit, "object", "on", "the audit log of tool calls, prompt gets and resource reads (see trust.md)"},
	{InTop, keyRegistry, "string (URL)", "the public MCP Registry", "the MCP Registry mcpdctl search, add and outdated use; mcpd does not read it"},
	{InTop, keyDashboard, "boolean", "true", "false turns off the live page at / on the HTTP face"},
	{InTop, "$schema", "any", "none", "ignored (editors read it)"},
	{InTop, "inputs", "any", "none", "ignored (VS Code's prompts for ${input:...})"},

	{InServer, "command", "string", "required unless url", "program to run (argv, never a shell)"},
	{InServer, "args", "array of strings", "none", "its arguments; ${VAR} and ${secret:NAME} expand"},
	{InServer, "env", "object of strings", "none", "environment added to mcpd's; ${VAR} and ${secret:NAME} expand"},
	{InServer, "cwd", "string", "mcpd's", "working directory, relative to the config file"},
	{InServer, "type", "string", `"http" with a url`, `"stdio", "http" (Streamable HTTP) or "sse" (HTTP+SSE)`},
	{InServer, "protocol", "string", `"auto"`, `"auto", "modern" or "legacy": how mcpd speaks to the server`},
	{InServer, "autostart", "boolean", "false", "start with mcpd instead of on first use"},
	{InServer, "restart", "string", `"on-failure"`, `"on-failure", "always" or "never"`},
	{InServer, "requestTimeout", durationType, "60s", "default deadline of one request"},
	{InServer, "shutdownGrace", durationType, "2s", "each wait of the stop sequence"},
	{InServer, "discoverTimeout", durationType, "3s", "bound of the era probe"},
	{InServer, "disabled", "boolean", "false", "keep the entry but do not run it"},
	{InServer, "maxLineSize", "integer (bytes)", "32 MiB", "largest stdout line accepted"},
	{InServer, "cache", `duration, "always" or "never"`, "as long as the server promises", "how long lists and reads are kept"},
	{InServer, "roots", "boolean or array of directories", "true", "roots declared to a legacy server, answered when no host does"},
	{InServer, "sampling", "boolean", "true", "forward the server's sampling requests to a host"},
	{InServer, "elicitation", "boolean", "true", "forward the server's elicitation requests to a host"},
	{InServer, "idleTimeout", durationType, "never", "stop the process after that long without requests or subscriptions"},
	{InServer, "stdinTimeout", durationType, "10s", "how long the server may leave its stdin unread before it is restarted"},
	{InServer, "sandbox", `"strict", false or object`, "false", "confine the server (Linux; see sandbox.md)"},
	{InServer, "url", "string (URL)", "none", "a remote server's MCP endpoint, instead of command"},
	{InServer, "headers", "object of strings", "none", "HTTP headers of a remote server; ${VAR} and ${secret:NAME} expand"},
	{InServer, "oauth", "object", "dynamic registration", "a remote server's OAuth client"},
	{InServer, keyPin, "string", `"warn"`, `"off", "warn" or "enforce": what a changed tool definition does (see trust.md)`},
	{InServer, keyShare, "string", `"global"`, `"global", "client" or "root": how many processes serve the apps`},
	{InServer, keyMaxInstances, "integer", "no cap", `the most instances of a "client" or "root" server at once`},
	{InServer, keyClientCaps, "object", "mcpd's declaration", "add to or remove from the capabilities declared to a legacy server"},

	{InOAuth, "clientId", "string", "dynamic registration", "the OAuth client id; ${VAR} expands"},
	{InOAuth, "clientSecret", "string", "none", "the client's secret (needs clientId); ${VAR} expands"},
	{InOAuth, "scopes", "array or space-separated string", "the server's", "scopes asked for at login"},
	{InOAuth, "redirectPort", "integer", "a free port", "loopback port of the login's redirect URI"},

	{InSandbox, "preset", "string", `"strict"`, `the preset the object adds to; only "strict"`},
	{InSandbox, "read", "array of absolute paths", "none", "more paths the server may read"},
	{InSandbox, "write", "array of absolute paths", "none", "more paths the server may write"},
	{InSandbox, "network", "boolean or array of TCP ports", "false", "network access: none, all, or connections to those ports"},
	{InSandbox, "limits", "object", "none", "resource limits of the server's processes"},
	{InSandbox, "bestEffort", "boolean", "false", "run with what the kernel supports instead of failing"},

	{InLimits, "memory", `string ("256MiB") or bytes`, "none", "memory limit (cgroup v2)"},
	{InLimits, "pids", "integer", "none", "most processes (cgroup v2)"},
	{InLimits, "cpu", "number (CPUs)", "none", "CPU quota (cgroup v2)"},
	{InLimits, "openFiles", "integer", "none", "most open files (RLIMIT_NOFILE)"},

	{InAudit, "enabled", "boolean", "true", "turns the audit log on"},
	{InAudit, "arguments", "boolean", "false", "record each call's full arguments beside their digest"},
	{InAudit, "maxSize", "integer (bytes)", "16 MiB", "size at which the file is rotated"},
	{InAudit, "keep", "integer", "3", "how many rotated files are kept"},
}

// Keys returns every key of the config file, object by object.
func Keys() []Key { return slices.Clone(keys) }

// keysIn returns the names of the keys of the object in.
func keysIn(in string) []string {
	var names []string
	for _, k := range keys {
		if k.In == in {
			names = append(names, k.Name)
		}
	}
	return names
}

// known returns key when it is one of names, else "" (which no case of the
// parser's switches matches, so the key falls to its "unknown key").
func known(key string, names []string) string {
	if slices.Contains(names, key) {
		return key
	}
	return ""
}
