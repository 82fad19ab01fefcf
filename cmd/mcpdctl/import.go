package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// importedServer is one server of an mcpd config written by config import.
type importedServer struct {
	Command  string            `json:"command"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
}

// hostServer is a server as MCP hosts write it (the union of the keys of
// Claude Desktop, Cursor and VS Code that matter).
type hostServer struct {
	Type     string            `json:"type"`
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	EnvFile  string            `json:"envFile"`
	Disabled bool              `json:"disabled"`
}

var (
	// inputVar is VS Code's ${input:NAME} (a prompt for a value).
	inputVar = regexp.MustCompile(`\$\{input:([^}]*)\}`)
	// vscodeVar is any other VS Code variable (${workspaceFolder}, ...),
	// which mcpd does not know; ${env:NAME} is fine as it is.
	vscodeVar = regexp.MustCompile(`\$\{(workspaceFolder|userHome|pathSeparator|cwd)[^}]*\}`)
	nonVar    = regexp.MustCompile(`[^A-Za-z0-9_]`)
)

// importConfig converts a Claude Desktop, Cursor or VS Code MCP config to an
// mcpd config (indented JSON with a final newline) and says what it had to
// leave out or change.
func importConfig(data []byte) ([]byte, []string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(config.StripJSONComments(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))), &top); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	// VS Code settings.json nests the servers under "mcp".
	if raw, ok := top["mcp"]; ok {
		var nested map[string]json.RawMessage
		if json.Unmarshal(raw, &nested) == nil {
			for k, v := range nested {
				if _, dup := top[k]; !dup {
					top[k] = v
				}
			}
		}
	}
	servers := map[string]hostServer{}
	found := false
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		found = true
		var m map[string]hostServer
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, fmt.Errorf("%q: %w", key, err)
		}
		for name, s := range m {
			if _, dup := servers[name]; dup {
				return nil, nil, fmt.Errorf("server %q is defined in both \"mcpServers\" and \"servers\"", name)
			}
			servers[name] = s
		}
	}
	if !found {
		return nil, nil, errors.New(`no "mcpServers" (Claude Desktop, Cursor) or "servers" (VS Code) object found`)
	}
	var warnings []string
	out := map[string]importedServer{}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := servers[name]
		switch {
		case s.URL != "" || (s.Type != "" && s.Type != "stdio"):
			warnings = append(warnings, fmt.Sprintf("server %q skipped: remote (%s) servers are not supported, only stdio", name, firstNonEmpty(s.Type, "url")))
			continue
		case s.Command == "":
			warnings = append(warnings, fmt.Sprintf("server %q skipped: no command", name))
			continue
		case isBridge(s):
			warnings = append(warnings, fmt.Sprintf("server %q skipped: it is already mcpd's (mcpdctl bridge)", name))
			continue
		}
		if s.EnvFile != "" {
			warnings = append(warnings, fmt.Sprintf("server %q: envFile %q is not supported; put the variables in \"env\"", name, s.EnvFile))
		}
		conv := func(v string) string {
			v = inputVar.ReplaceAllStringFunc(v, func(m string) string {
				id := inputVar.FindStringSubmatch(m)[1]
				env := strings.ToUpper(nonVar.ReplaceAllString(id, "_"))
				warnings = append(warnings, fmt.Sprintf("server %q: ${input:%s} became ${%s}; set %s in mcpd's environment", name, id, env, env))
				return "${" + env + "}"
			})
			if vscodeVar.MatchString(v) {
				warnings = append(warnings, fmt.Sprintf("server %q: %q uses a VS Code variable mcpd does not expand; edit it", name, v))
			}
			return v
		}
		is := importedServer{Command: conv(s.Command), Cwd: conv(s.Cwd), Disabled: s.Disabled}
		for _, a := range s.Args {
			is.Args = append(is.Args, conv(a))
		}
		if len(s.Env) > 0 {
			is.Env = map[string]string{}
			for k, v := range s.Env {
				is.Env[k] = conv(v)
			}
		}
		out[name] = is
	}
	b, err := marshalNoEscapeIndent(map[string]any{"mcpServers": out})
	if err != nil {
		return nil, nil, err
	}
	return b, warnings, nil
}

// isBridge reports whether s runs mcpdctl's bridge, i.e. is a host's entry
// for a server mcpd already serves: importing it would make mcpd bridge
// into itself.
func isBridge(s hostServer) bool {
	return strings.TrimSuffix(filepath.Base(s.Command), ".exe") == "mcpdctl" && slices.Contains(s.Args, "bridge")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// marshalNoEscapeIndent is indented JSON without HTML escaping, with a
// final newline.
func marshalNoEscapeIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
