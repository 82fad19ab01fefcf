package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// The decoding of a host's file checks the type of each key it reads and
// says in words which key is wrong, rather than passing on encoding/json's
// errors, which name Go types.

// syntaxError locates a JSON syntax error in data by line and column, as
// mcpd's own config errors do.
func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	line, col := config.Position(data, se.Offset)
	return fmt.Errorf("not valid JSON: line %d, column %d: %s", line, col, se.Error())
}

// jsonKind names the JSON type of raw, with an article: "an object",
// "a string", ...
func jsonKind(raw json.RawMessage) string {
	switch k := config.Kind(raw); k {
	case "object", "array":
		return "an " + k
	case "string", "boolean", "number":
		return "a " + k
	default: // null, nothing
		return k
	}
}

// objectMembers decodes raw as a JSON object; what names it in the error.
func objectMembers(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	if k := jsonKind(raw); k != "an object" {
		return nil, fmt.Errorf("%s must be an object, not %s", what, k)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return m, nil
}

// fieldReader reads the keys of one server, keeping the first type error.
type fieldReader struct {
	where, name string
	err         error
}

func (r *fieldReader) fail(key, want string, raw json.RawMessage) {
	if r.err == nil {
		r.err = fmt.Errorf("server %q in %s: key %q must be %s, not %s", r.name, r.where, key, want, jsonKind(raw))
	}
}

func (r *fieldReader) str(key string, raw json.RawMessage) string {
	if raw == nil || jsonKind(raw) == "null" {
		return ""
	}
	var s string
	if jsonKind(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		r.fail(key, "a string", raw)
	}
	return s
}

func (r *fieldReader) boolean(key string, raw json.RawMessage) bool {
	if raw == nil {
		return false
	}
	if jsonKind(raw) != "a boolean" {
		r.fail(key, "true or false", raw)
		return false
	}
	return bytes.Equal(bytes.TrimSpace(raw), []byte("true"))
}

func (r *fieldReader) strings(key string, raw json.RawMessage) []string {
	if raw == nil || jsonKind(raw) == "null" {
		return nil
	}
	var elems []json.RawMessage
	if jsonKind(raw) != "an array" || json.Unmarshal(raw, &elems) != nil {
		r.fail(key, "an array of strings", raw)
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		out = append(out, r.str(fmt.Sprintf("%s[%d]", key, i), e))
	}
	return out
}

func (r *fieldReader) env(key string, raw json.RawMessage) map[string]string {
	if raw == nil || jsonKind(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if jsonKind(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		r.fail(key, "an object of strings", raw)
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = r.str(key+"."+k, v)
	}
	return out
}

// decodeHostServer reads one server entry of the map where; zed selects
// Zed's shapes: {"command": "...", "args": [...], "env": {...}}, the older
// {"command": {"path": ..., "args": ..., "env": ...}}, and extension entries.
func decodeHostServer(where, name string, raw json.RawMessage, zed bool) (hostServer, error) {
	m, err := objectMembers(raw, fmt.Sprintf("server %q in %s", name, where))
	if err != nil {
		return hostServer{}, err
	}
	r := &fieldReader{where: where, name: name}
	hs := hostServer{
		Type:     r.str("type", m["type"]),
		Cwd:      r.str("cwd", m["cwd"]),
		EnvFile:  r.str("envFile", m["envFile"]),
		Disabled: r.boolean("disabled", m["disabled"]),
	}
	hs.Remote = remoteKey(r, m, hs.Type)
	hs.Headers = r.env("headers", m["headers"])
	if hs.URL = r.str("url", m["url"]); hs.URL == "" {
		hs.URL = r.str("serverUrl", m["serverUrl"])
	}
	cmd := m["command"]
	if zed && jsonKind(cmd) == "an object" {
		var c map[string]json.RawMessage
		_ = json.Unmarshal(cmd, &c)
		hs.Command = r.str("command.path", c["path"])
		hs.Args = r.strings("command.args", c["args"])
		hs.Env = r.env("command.env", c["env"])
	} else {
		hs.Command = r.str("command", cmd)
		hs.Args = r.strings("args", m["args"])
		hs.Env = r.env("env", m["env"])
	}
	if zed {
		hs.Extension = r.str("source", m["source"]) == "extension"
	}
	return hs, r.err
}

// remoteKey says what makes the entry a remote server: its "url" (Cursor,
// VS Code, Claude Code, Zed), "serverUrl" (Windsurf) or a "type" other than
// stdio. The URL itself is not quoted: it may carry a token.
func remoteKey(r *fieldReader, m map[string]json.RawMessage, typ string) string {
	switch {
	case typ != "" && typ != "stdio":
		return fmt.Sprintf("type %q", typ)
	case r.str("url", m["url"]) != "":
		return `"url"`
	case r.str("serverUrl", m["serverUrl"]) != "":
		return `"serverUrl"`
	}
	return ""
}
