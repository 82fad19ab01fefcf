package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// MCP error codes of the modern Streamable HTTP transport.
const (
	codeHeaderMismatch            = -32020
	codeMissingClientCapabilities = -32021
)

// Standard request headers of the modern era (2026-07-28 Streamable HTTP).
const (
	hdrProtocolVersion = "MCP-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"
	hdrParamPrefix     = "Mcp-Param-"
	hdrSessionID       = "Mcp-Session-Id"
)

// paramHeaders reads the x-mcp-header annotations of a tool's inputSchema:
// header name (after Mcp-Param-) → argument. nil when there are none.
func paramHeaders(schema json.RawMessage) map[string]string {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out map[string]string
	for arg, p := range s.Properties {
		if p.Header == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[p.Header] = arg
	}
	return out
}

// headerValue is the decoded value of header name: a value of the form
// =?base64?…?= is Base64 of UTF-8. ok is false when the header is absent;
// bad is set when its Base64 is invalid.
func headerValue(h http.Header, name string) (v string, ok bool, bad bool) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return "", false, false
	}
	v = strings.TrimSpace(vals[0])
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		dec, err := base64.StdEncoding.Strict().DecodeString(v[len("=?base64?") : len(v)-len("?=")])
		if err != nil {
			return v, true, true
		}
		return string(dec), true, false
	}
	return v, true, false
}

func mismatch(format string, args ...any) *jsonrpc.Error {
	return jsonrpc.Errorf(codeHeaderMismatch, "header mismatch: "+format, args...)
}

// checkModernHeaders checks the standard headers of a modern request
// against its body: MCP-Protocol-Version, Mcp-Method, Mcp-Name and the
// Mcp-Param-* headers of the tool's arguments, when the bridge knows the
// tool's schema.
func checkModernHeaders(h http.Header, r *hostReq, b *bridge) *jsonrpc.Error {
	v, ok, _ := headerValue(h, hdrProtocolVersion)
	switch {
	case !ok:
		return mismatch("missing required %s header", hdrProtocolVersion)
	case r.version != "" && v != r.version:
		return mismatch("%s header %q does not match request %s %q", hdrProtocolVersion, v, jsonrpc.MetaProtocolVersion, r.version)
	}
	m, ok, bad := headerValue(h, hdrMethod)
	switch {
	case !ok:
		return mismatch("missing required %s header", hdrMethod)
	case bad || m != r.method:
		return mismatch("%s header value %q does not match body value %q", hdrMethod, m, r.method)
	}
	var key string
	switch r.method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		// The tasks extension: "the client MUST set the Mcp-Name header
		// to the value of params.taskId".
		key = "taskId"
	default:
		return nil
	}
	want, plain := jsonrpc.PlainText(r.params[key])
	if !plain {
		_ = json.Unmarshal(r.params[key], &want)
	}
	n, ok, bad := headerValue(h, hdrName)
	switch {
	case !ok:
		return mismatch("missing required %s header for method %q", hdrName, r.method)
	case bad || n != want:
		return mismatch("%s header value %q does not match body value %q", hdrName, n, want)
	}
	if r.method == "tools/call" && b != nil {
		return checkParamHeaders(h, r, b, want)
	}
	return nil
}

// learnToolParams lists the tools once, so that the Mcp-Param-* headers
// of a tools/call are checked even before any host listed them.
func (b *bridge) learnToolParams(ctx context.Context) {
	b.mu.Lock()
	known := b.toolsListed
	b.mu.Unlock()
	if known || b.waitUp(ctx) != nil {
		return
	}
	_, _ = b.list(ctx, "tools/list")
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call against
// its arguments, for a tool whose listed schema declares x-mcp-header.
func checkParamHeaders(h http.Header, r *hostReq, b *bridge, tool string) *jsonrpc.Error {
	b.mu.Lock()
	hs := b.toolParams[tool]
	b.mu.Unlock()
	if len(hs) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	_ = json.Unmarshal(r.params["arguments"], &args)
	for name, arg := range hs {
		body, inBody := args[arg]
		inBody = inBody && string(body) != "null"
		v, ok, bad := headerValue(h, hdrParamPrefix+name)
		switch {
		case bad:
			return mismatch("%s%s header is not valid Base64", hdrParamPrefix, name)
		case inBody && !ok:
			return mismatch("missing required %s%s header for argument %q", hdrParamPrefix, name, arg)
		case !inBody && ok:
			return mismatch("%s%s header is set but argument %q is absent", hdrParamPrefix, name, arg)
		case inBody && !sameParam(v, body):
			return mismatch("%s%s header value %q does not match argument %q", hdrParamPrefix, name, v, arg)
		}
	}
	return nil
}

// sameParam compares a header value with the argument's JSON value:
// strings exactly, numbers numerically, booleans as true/false.
func sameParam(header string, body json.RawMessage) bool {
	switch {
	case len(body) > 0 && body[0] == '"':
		var s string
		return json.Unmarshal(body, &s) == nil && s == header
	case string(body) == "true" || string(body) == "false":
		return header == string(body)
	}
	x, ok1 := new(big.Float).SetString(string(body))
	y, ok2 := new(big.Float).SetString(header)
	return ok1 && ok2 && x.Cmp(y) == 0
}
