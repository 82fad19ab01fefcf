package remote

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Header names of the Streamable HTTP transport.
const (
	hdrSessionID       = "Mcp-Session-Id"
	hdrProtocolVersion = "MCP-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"
	hdrLastEventID     = "Last-Event-ID"
)

// reservedHeaders are set by the transport; configured headers may not.
var reservedHeaders = []string{
	hdrSessionID, hdrProtocolVersion, hdrMethod, hdrName, hdrLastEventID,
	"Accept", "Content-Type", "Content-Length", "Host", "Connection", "Transfer-Encoding",
}

// IsReservedHeader reports whether name is a header the transport sets
// itself (Mcp-Param-* included), which a server's config may not set.
func IsReservedHeader(name string) bool {
	for _, r := range reservedHeaders {
		if strings.EqualFold(r, name) {
			return true
		}
	}
	return len(name) >= len("Mcp-Param-") && strings.EqualFold(name[:len("Mcp-Param-")], "Mcp-Param-")
}

// message is what the Conn learns from one message mcpd writes.
type message struct {
	method  string
	id      json.RawMessage // nil for a notification
	version string          // _meta protocolVersion (modern requests)
	name    string          // params.name or params.uri, for Mcp-Name
	args    json.RawMessage // params.arguments of a tools/call, for Mcp-Param-*
	// cancelOf is the requestId of a notifications/cancelled.
	cancelOf json.RawMessage
	response bool
}

// inspect decodes what the headers need from msg.
func inspect(msg []byte) (message, error) {
	env, err := jsonrpc.DecodeEnvelope(msg)
	if err != nil {
		return message{}, err
	}
	m := message{method: env.Method}
	if len(env.ID) > 0 && string(env.ID) != "null" {
		m.id = env.ID
	}
	if env.Method == "" {
		m.response = true
		return m, nil
	}
	if len(env.Params) == 0 {
		return m, nil
	}
	var p struct {
		Name      json.RawMessage            `json:"name"`
		Arguments json.RawMessage            `json:"arguments"`
		URI       json.RawMessage            `json:"uri"`
		RequestID json.RawMessage            `json:"requestId"`
		Meta      map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(env.Params, &p) != nil {
		return m, nil
	}
	_ = json.Unmarshal(p.Meta[jsonrpc.MetaProtocolVersion], &m.version)
	switch env.Method {
	case "tools/call":
		_ = json.Unmarshal(p.Name, &m.name)
		m.args = p.Arguments
	case "prompts/get":
		_ = json.Unmarshal(p.Name, &m.name)
	case "resources/read":
		_ = json.Unmarshal(p.URI, &m.name)
	case "notifications/cancelled":
		m.cancelOf = p.RequestID
	}
	return m, nil
}

// headerValue encodes v for an Mcp-* header: plain when it is visible
// ASCII or inner spaces, else (and when it looks like the sentinel itself)
// =?base64?...?=.
func headerValue(v string) string {
	plain := !strings.HasPrefix(v, "=?base64?") && strings.TrimSpace(v) == v
	for i := 0; plain && i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}
