package fakemcp

import (
	"encoding/json"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The handshake of each era: the _meta envelope every modern request
// carries, and the legacy initialize; both declare the same capabilities.

// checkEnvelope validates the modern _meta envelope: "Missing a required key
// ⇒ malformed ⇒ server must answer -32602".
func (s *server) checkEnvelope(r *req) *jsonrpc.Error {
	var version string
	if json.Unmarshal(r.meta[jsonrpc.MetaProtocolVersion], &version) != nil || version == "" {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing or invalid _meta field %q", jsonrpc.MetaProtocolVersion)
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(r.meta[jsonrpc.MetaClientCapabilities], &caps) != nil || caps == nil {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing or invalid _meta field %q", jsonrpc.MetaClientCapabilities)
	}
	if !slices.Contains(s.versions, version) || version < "2026" {
		return jsonrpc.UnsupportedVersion(version, s.versions)
	}
	return nil
}

var capabilities = map[string]any{
	"tools":     map[string]any{"listChanged": true},
	"prompts":   map[string]any{"listChanged": true},
	"resources": map[string]any{"subscribe": true, "listChanged": true},
	"logging":   map[string]any{},
}

const instructions = "fakemcp is a fake MCP server for tests"

func (s *server) initialize(r *req) {
	var version string
	_ = json.Unmarshal(r.params["protocolVersion"], &version)
	if version == "" {
		s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "protocolVersion required"))
		return
	}
	if !slices.Contains(jsonrpc.LegacyVersions(), version) {
		version = jsonrpc.LegacyVersion
	}
	s.mu.Lock()
	s.initialized = true
	s.mu.Unlock()
	s.reply(r, map[string]any{
		"protocolVersion": version,
		"capabilities":    s.caps(),
		"serverInfo":      s.info,
		"instructions":    instructions,
	}, nil)
}
