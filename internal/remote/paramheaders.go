package remote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// hdrParamPrefix starts the header that mirrors a tool argument whose
// schema property carries x-mcp-header (modern era).
const hdrParamPrefix = "Mcp-Param-"

// paramHeader is one x-mcp-header annotation: argument arg goes in header
// Mcp-Param-{name}.
type paramHeader struct {
	name, arg string
}

// toolParamHeaders reads and checks a tool's x-mcp-header annotations. A
// name must be a non-empty HTTP token, unique among the tool's (case does
// not count), on a property of type string, integer or boolean; otherwise
// the tool must be rejected (err).
func toolParamHeaders(schema json.RawMessage) ([]paramHeader, error) {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil, nil
	}
	var s struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	var out []paramHeader
	seen := map[string]string{} // lower-case header name → argument
	for arg, prop := range s.Properties {
		raw, ok := prop["x-mcp-header"]
		if !ok {
			continue
		}
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("argument %q: x-mcp-header is not a string", arg)
		}
		if err := checkHeaderName(name); err != nil {
			return nil, fmt.Errorf("argument %q: x-mcp-header %q: %w", arg, name, err)
		}
		var typ string
		_ = json.Unmarshal(prop["type"], &typ)
		if typ != "string" && typ != "integer" && typ != "boolean" {
			return nil, fmt.Errorf("argument %q: x-mcp-header on a property of type %s (string, integer or boolean only)", arg, typeName(prop["type"]))
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return nil, fmt.Errorf("x-mcp-header %q is on both %q and %q", name, other, arg)
		}
		seen[strings.ToLower(name)] = arg
		out = append(out, paramHeader{name: name, arg: arg})
	}
	return out, nil
}

func typeName(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	return string(raw)
}

// checkHeaderName checks that name is an HTTP token (RFC 9110 tchar).
func checkHeaderName(name string) error {
	if name == "" {
		return fmt.Errorf("empty")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return fmt.Errorf("byte %q is not allowed in a header name", c)
		}
	}
	return nil
}

// filterTools checks the x-mcp-header annotations of a modern tools/list
// response: tools with invalid ones are dropped (with a warning in the
// server's log) and the valid annotations are remembered for tools/call.
// It returns msg itself when nothing was dropped.
func (c *Conn) filterTools(msg []byte) []byte {
	if !bytes.Contains(msg, []byte("x-mcp-header")) {
		return msg
	}
	var env map[string]json.RawMessage
	var result map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(msg, &env) != nil || json.Unmarshal(env["result"], &result) != nil || json.Unmarshal(result["tools"], &tools) != nil {
		return msg
	}
	kept := tools[:0:0]
	learned := map[string][]paramHeader{}
	for _, raw := range tools {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &t) != nil {
			kept = append(kept, raw)
			continue
		}
		hs, err := toolParamHeaders(t.InputSchema)
		if err != nil {
			c.warn("tool %q dropped from tools/list: %v", t.Name, err)
			continue
		}
		if len(hs) > 0 {
			learned[t.Name] = hs
		}
		kept = append(kept, raw)
	}
	c.mu.Lock()
	if c.paramHeaders == nil {
		c.paramHeaders = map[string][]paramHeader{}
	}
	for name, hs := range learned {
		c.paramHeaders[name] = hs
	}
	c.mu.Unlock()
	if len(kept) == len(tools) {
		return msg
	}
	var err error
	if result["tools"], err = json.Marshal(kept); err != nil {
		return msg
	}
	if env["result"], err = json.Marshal(result); err != nil {
		return msg
	}
	out, err := json.Marshal(env)
	if err != nil {
		return msg
	}
	return out
}

// setParamHeaders sets the Mcp-Param-* headers of a modern tools/call
// whose tool declared x-mcp-header arguments: one per argument present and
// not null; strings encoded as headerValue does, integers and booleans as
// their JSON text.
func (c *Conn) setParamHeaders(h interface{ Set(string, string) }, m message) {
	if m.method != "tools/call" || len(m.args) == 0 {
		return
	}
	c.mu.Lock()
	hs := c.paramHeaders[m.name]
	c.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(m.args, &args) != nil {
		return
	}
	for _, ph := range hs {
		v, ok := args[ph.arg]
		if !ok || string(v) == "null" {
			continue
		}
		if len(v) > 0 && v[0] == '"' {
			var s string
			if json.Unmarshal(v, &s) != nil {
				continue
			}
			h.Set(hdrParamPrefix+ph.name, headerValue(s))
			continue
		}
		h.Set(hdrParamPrefix+ph.name, string(v))
	}
}
