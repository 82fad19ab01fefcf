package hosts

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// A Server is what a host's entry runs: a command on stdio, or a remote
// server's URL.
type Server struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// EnvFile is VS Code's and Cursor's file of variables, if named.
	EnvFile string `json:"envFile,omitempty"`
	URL     string `json:"url,omitempty"`
	// Transport is "stdio", "http" (Streamable HTTP) or "sse".
	Transport string            `json:"transport"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// A shape is how one host writes its entries: the keys it uses for each
// part of a server.
type shape struct {
	command     string // key of the command: "command", Goose's "cmd"
	commandList bool   // the command key holds the command and its args (opencode)
	args, env   string
	cwd         string
	// url is the key of a Streamable HTTP server's URL, the one written;
	// sseURL a key that holds an SSE server's (Gemini CLI's "url").
	url, sseURL string
	// headers is the key of a remote server's headers; "a.b" is key b
	// of the mapping at key a (Continue's requestOptions.headers), whose
	// whole a belongs to the transport.
	headers string
	// typeKey is the key naming the transport, "" when the host has
	// none; stdioType and httpType are the values it writes, sseTypes
	// those that mean SSE.
	typeKey             string
	stdioType, httpType string
	sseTypes            []string
	// transportKeys are further keys of a server's transport, left out
	// when the entry is pointed at mcpd.
	transportKeys []string
	// moreHeaders adds the headers a remote server's entry names in keys
	// of the host's own (Codex's bearer_token_env_var).
	moreHeaders func(f map[string]any, h map[string]string) error
}

// std is the shape most hosts share (Cursor's, Claude Desktop's).
var std = shape{command: "command", args: "args", env: "env", cwd: "cwd", url: "url", headers: "headers",
	typeKey: "type", sseTypes: []string{"sse"}, transportKeys: []string{"envFile", "transport", "serverUrl"}}

// drops reports whether key belongs to the entry's transport: what connect
// replaces, as against the host's own options for the entry.
func (s shape) drops(key string) bool {
	headers, _, _ := strings.Cut(s.headers, ".")
	for _, k := range []string{s.command, s.args, s.env, s.cwd, s.url, s.sseURL, headers, s.typeKey} {
		if k != "" && k == key {
			return true
		}
	}
	return slices.Contains(s.transportKeys, key)
}

// decode reads a server from an entry's fields.
func (s shape) decode(f map[string]any) (Server, error) {
	var srv Server
	var err error
	get := func(key string) any {
		if key == "" {
			return nil
		}
		if outer, inner, ok := strings.Cut(key, "."); ok {
			m, _ := f[outer].(map[string]any)
			return m[inner]
		}
		return f[key]
	}
	typ, _ := get(s.typeKey).(string)
	if u := get(s.url); u != nil {
		srv.URL, err = asString(s.url, u)
		srv.Transport = "http"
		if slices.Contains(s.sseTypes, typ) {
			srv.Transport = "sse"
		}
	} else if u := get(s.sseURL); u != nil {
		srv.URL, err = asString(s.sseURL, u)
		srv.Transport = "sse"
		if typ == s.httpType && typ != "" || typ == "http" || typ == "streamable-http" {
			srv.Transport = "http"
		}
	}
	if err != nil {
		return srv, err
	}
	if srv.URL != "" {
		if srv.Headers, err = asStringMap(s.headers, get(s.headers)); err != nil || s.moreHeaders == nil {
			return srv, err
		}
		if srv.Headers == nil {
			srv.Headers = map[string]string{}
		}
		err = s.moreHeaders(f, srv.Headers)
		if len(srv.Headers) == 0 {
			srv.Headers = nil
		}
		return srv, err
	}
	srv.Transport = "stdio"
	c := get(s.command)
	if s.commandList {
		var all []string
		if all, err = asStrings(s.command, c); err != nil {
			return srv, err
		}
		if len(all) > 0 {
			srv.Command, srv.Args = all[0], all[1:]
		}
	} else if c != nil {
		if srv.Command, err = asString(s.command, c); err != nil {
			return srv, err
		}
	}
	if s.args != "" {
		if a := get(s.args); a != nil {
			if srv.Args, err = asStrings(s.args, a); err != nil {
				return srv, err
			}
		}
	}
	if srv.Env, err = asStringMap(s.env, get(s.env)); err != nil {
		return srv, err
	}
	if c := get(s.cwd); c != nil {
		if srv.Cwd, err = asString(s.cwd, c); err != nil {
			return srv, err
		}
	}
	if e, ok := f["envFile"].(string); ok {
		srv.EnvFile = e
	}
	return srv, nil
}

// encode is the members that point an entry of this shape at t.
func (s shape) encode(t Target) []member {
	var out []member
	if t.URL != "" {
		if s.typeKey != "" && s.httpType != "" {
			out = append(out, member{s.typeKey, s.httpType})
		}
		return append(out, member{s.url, t.URL})
	}
	if s.typeKey != "" && s.stdioType != "" {
		out = append(out, member{s.typeKey, s.stdioType})
	}
	if s.commandList {
		return append(out, member{s.command, append([]string{t.Command}, t.Args...)})
	}
	return append(out, member{s.command, t.Command}, member{s.args, t.Args})
}

// disabled reports whether an entry's fields turn it off: "disabled":
// true, or "enabled": false.
func disabled(f map[string]any) bool {
	d, _ := f["disabled"].(bool)
	e, ok := f["enabled"].(bool)
	return d || ok && !e
}

func asString(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%q must be a string, not %s", key, kindOf(v))
	}
	return s, nil
}

func asStrings(key string, v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%q must be a list of strings, not %s", key, kindOf(v))
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%q[%d] must be a string, not %s", key, i, kindOf(x))
		}
		out[i] = s
	}
	return out, nil
}

func asStringMap(key string, v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%q must be an object of strings, not %s", key, kindOf(v))
	}
	out := make(map[string]string, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch x := m[k].(type) {
		case string:
			out[k] = x
		case json.Number, int64, float64, bool:
			out[k] = fmt.Sprint(x)
		default:
			return nil, fmt.Errorf("%q.%s must be a string, not %s", key, k, kindOf(x))
		}
	}
	return out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a number"
}
