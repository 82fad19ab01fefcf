package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// CheckIncoming returns the Invalid Request error (-32600) for m, decoded
// from line, when it is not a JSON-RPC 2.0 request, notification or
// response as MCP has them: "jsonrpc" is "2.0"; a request's id is a string
// or an integer, "never null"; a method is not empty; a message is a
// request or notification (method) or a response (result or error), not
// both. It returns nil for a well-formed message.
func CheckIncoming(m *Message, line []byte) *Error {
	switch {
	case m.JSONRPC != Version:
		return Errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	case m.Method == "" && hasMember(line, "method"):
		return Errorf(CodeInvalidRequest, "invalid request: the method is empty")
	case m.Method != "" && (m.Result != nil || m.Error != nil):
		return Errorf(CodeInvalidRequest, "invalid request: a message has a method (request, notification) or a result or error (response), not both")
	case m.Method == "" && len(m.ID) == 0 && m.Result == nil && m.Error == nil:
		return Errorf(CodeInvalidRequest, "invalid request: a message has a method (request, notification) or an id (response)")
	case m.Method != "" && len(m.ID) > 0 && !ValidID(m.ID):
		return Errorf(CodeInvalidRequest, "invalid request: the id must be a string or an integer, not %s", m.ID)
	}
	return nil
}

// ValidID reports whether id is a string or an integer (no fraction, no
// exponent), the ids MCP allows.
func ValidID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true // a string (the line was valid JSON)
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// AnswerID is the id an error answer to m carries: m's own when it is a
// valid one, else null ("if the request id was unreadable").
func AnswerID(m *Message) json.RawMessage {
	if ValidID(m.ID) {
		return m.ID
	}
	return json.RawMessage("null")
}

// IsBatch reports whether line is a JSON array (a JSON-RPC batch, which
// MCP removed in 2025-06-18).
func IsBatch(line []byte) bool {
	i := SkipSpace(line, 0)
	return i < len(line) && line[i] == '[' && Valid(line)
}

// hasMember reports whether the JSON object obj has a top-level member key.
func hasMember(obj []byte, key string) bool {
	if !bytes.Contains(obj, []byte(`"`+key+`"`)) {
		return false
	}
	found := false
	ScanMembers(obj, func(k, _, _ []byte) { found = found || string(k) == key })
	return found
}

// BatchError is the answer to a batch.
func BatchError() *Error {
	return Errorf(CodeInvalidRequest, "invalid request: JSON-RPC batching is not supported: it was removed in protocol version 2025-06-18; send one message per line or request")
}
