package jsonrpc

import (
	"encoding/json"
	"strings"
)

// Envelope is the part of a message a reader decodes; params and result
// stay raw.
type Envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// DecodeEnvelope decodes the JSON-RPC envelope of one message: it finds
// the top-level members and keeps id, params and result as slices of msg
// (no copy), the method as a string, and decodes only an error object. It
// gives the same Envelope as json.Unmarshal into an Envelope, which it
// falls back to for anything unusual: a key with an escape or a key that
// matches a member only case-insensitively (encoding/json accepts "ID"), a
// method with an escape or not a string, an error member, or anything it
// cannot scan.
//
// msg must be one valid JSON object (mcpd's transport checks each line), so
// this scans it once, without validating again, and without copying the
// result: on the hot path every response passes through here.
func DecodeEnvelope(msg []byte) (Envelope, error) {
	if env, _, ok := scanEnvelope(msg); ok {
		return env, nil
	}
	var env Envelope
	err := json.Unmarshal(msg, &env)
	return env, err
}

// scanEnvelope is the fast path of DecodeEnvelope; ok is false when the
// general path must decide. version is the "jsonrpc" member's value as
// written, nil when absent.
func scanEnvelope(msg []byte) (env Envelope, version []byte, ok bool) {
	i := SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return env, nil, false
	}
	i = SkipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return env, nil, SkipSpace(msg, i+1) == len(msg)
	}
	for {
		// key
		if i >= len(msg) || msg[i] != '"' {
			return env, nil, false
		}
		end, escaped := StringEnd(msg, i)
		if end < 0 || escaped {
			return env, nil, false
		}
		key := msg[i+1 : end-1]
		i = SkipSpace(msg, end)
		if i >= len(msg) || msg[i] != ':' {
			return env, nil, false
		}
		i = SkipSpace(msg, i+1)
		vstart := i
		i = ValueEnd(msg, i)
		if i < 0 {
			return env, nil, false
		}
		val := msg[vstart:i]
		switch string(key) {
		case "jsonrpc":
			version = val
		case "id":
			env.ID = val
		case "params":
			env.Params = val
		case "result":
			env.Result = val
		case "method":
			switch {
			case string(val) == "null":
				// json.Unmarshal leaves the string as it was.
			case !plainString(val):
				return env, nil, false // escapes; non-ASCII (invalid UTF-8 is replaced)
			default:
				env.Method = string(val[1 : len(val)-1])
			}
		case "error":
			if string(val) == "null" {
				env.Error = nil
				break
			}
			return env, nil, false // rare: leave the error object to encoding/json
		default:
			for _, name := range [...]string{"id", "params", "result", "method", "error", "jsonrpc"} {
				if strings.EqualFold(string(key), name) {
					return env, nil, false
				}
			}
		}
		i = SkipSpace(msg, i)
		if i >= len(msg) {
			return env, nil, false
		}
		switch msg[i] {
		case ',':
			i = SkipSpace(msg, i+1)
		case '}':
			return env, version, SkipSpace(msg, i+1) == len(msg)
		default:
			return env, nil, false
		}
	}
}

// plainString reports whether val is a JSON string of printable ASCII
// without escapes: its text is then val without the quotes.
func plainString(val []byte) bool {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return false
	}
	for _, c := range val[1 : len(val)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// SkipSpace returns the index of the first non-whitespace byte of b at or
// after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the index just past the JSON string starting at b[i] (a
// '"'), and whether it contains a backslash; -1 if it does not end.
func StringEnd(b []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j + 1, escaped
		case '\\':
			escaped = true
			j++ // the escaped character, never the end of the string
		}
	}
	return -1, escaped
}

// ValueEnd returns the index just past the JSON value starting at b[i],
// or -1. Nested objects and arrays are skipped by counting brackets outside
// strings; the input is known to be valid JSON.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := StringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := StringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // number, true, false, null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return -1
				}
				return j
			}
			j++
		}
		return -1 // a top-level member is always followed by ',' or '}'
	}
}
