// Package jsonrpc is mcpd's wire vocabulary for MCP over JSON-RPC 2.0:
// message and error types, error codes, the protocol versions of both eras,
// the _meta keys of the modern envelope, a fast envelope scanner, JSON
// string appending, progress-token validation and a bounded line reader.
// It imports only the standard library, so the daemon's runtime, the
// host-facing bridge and the test servers all speak from one definition.
package jsonrpc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Version is the value of every message's "jsonrpc" member.
const Version = "2.0"

// JSON-RPC and MCP error codes.
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeUnsupportedProtocolVersion = -32022
)

// Protocol versions: the latest of each era.
const (
	ModernVersion = "2026-07-28"
	LegacyVersion = "2025-11-25"
)

// ModernVersions are the modern-era versions mcpd implements, latest first.
func ModernVersions() []string { return []string{ModernVersion} }

// LegacyVersions are the legacy-era versions mcpd implements, latest first.
func LegacyVersions() []string {
	return []string{LegacyVersion, "2025-06-18", "2025-03-26", "2024-11-05"}
}

// SupportedVersions are all versions mcpd implements, modern first.
func SupportedVersions() []string { return slices.Concat(ModernVersions(), LegacyVersions()) }

// Keys of the modern per-request _meta envelope and of tagged
// notifications.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	// MetaSubscriptionID tags every notification a modern server delivers
	// on a subscriptions/listen stream: the JSON-RPC id of that listen.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// Message is any JSON-RPC message; params and results stay raw.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("mcp error %d: %s", e.Code, e.Message) }

// Errorf is an Error with a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData is an Error whose data is v encoded; a v that cannot be encoded
// leaves the data out.
func WithData(code int64, message string, v any) *Error {
	e := &Error{Code: code, Message: message}
	if data, err := json.Marshal(v); err == nil {
		e.Data = data
	}
	return e
}

// UnsupportedVersion is the -32022 error for a request in a version not
// among supported, with the data MCP specifies.
func UnsupportedVersion(requested string, supported []string) *Error {
	return WithData(CodeUnsupportedProtocolVersion, "unsupported protocol version",
		map[string]any{"supported": supported, "requested": requested})
}

// ValidProgressToken reports whether t is a JSON string or integer, the
// two forms MCP allows for a progress token.
func ValidProgressToken(t json.RawMessage) bool {
	if len(t) == 0 {
		return false
	}
	if t[0] == '"' {
		var s string
		return json.Unmarshal(t, &s) == nil
	}
	_, err := strconv.ParseInt(string(t), 10, 64)
	return err == nil
}

// AppendString appends s as a JSON string exactly as json.Marshal writes
// it: printable ASCII other than '"', '\\', '<', '>' and '&' is copied as
// is, anything else goes through json.Marshal.
func AppendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			return append(b, q...), nil
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// ListKeys maps each MCP list method to the member of its result that
// holds the items.
var ListKeys = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}
