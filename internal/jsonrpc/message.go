package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// DecodeMessage decodes one message exactly as json.Unmarshal into a
// Message does, errors included, without its cost on the usual message:
// the line is checked with Valid, then scanned once (as
// DecodeEnvelope does); id, params and result are slices of line (no
// copy). Anything unusual (an error member, escapes in keys or in the
// method, a "jsonrpc" that is not a plain string) goes through
// json.Unmarshal. Unlike DecodeEnvelope it accepts any input, such as a
// host's line nobody checked.
func DecodeMessage(line []byte) (Message, error) {
	if Valid(line) {
		return DecodeValidMessage(line)
	}
	var m Message
	err := json.Unmarshal(line, &m)
	return m, err
}

// DecodeValidMessage is DecodeMessage of a line already known to be valid
// JSON (Valid), which it does not check again.
func DecodeValidMessage(line []byte) (Message, error) {
	if env, version, ok := scanEnvelope(line); ok && (version == nil || string(version) == "null" || plainString(version)) {
		m := Message{ID: env.ID, Method: env.Method, Params: env.Params, Result: env.Result}
		if plainString(version) {
			m.JSONRPC = string(version[1 : len(version)-1])
		}
		return m, nil
	}
	var m Message
	err := json.Unmarshal(line, &m)
	return m, err
}

// Member is one top-level member of a JSON object, as slices of it.
type Member struct {
	Key   string // without quotes; never has escapes
	Value []byte
	Span  []byte // "key":value, as written
}

// Members returns the top-level members of obj in order, without copying
// their values. obj must be valid JSON; ok is false unless it is an object
// whose keys are printable ASCII without escapes (so that each key is its
// text, as json.Unmarshal into a map would make it).
func Members(obj []byte) (ms []Member, ok bool) {
	ok = ScanMembers(obj, func(key, value, span []byte) {
		if ms == nil {
			ms = make([]Member, 0, 4) // most objects of MCP's envelope have a few
		}
		ms = append(ms, Member{Key: keyText(key), Value: value, Span: span})
	})
	if !ok {
		return nil, false
	}
	return ms, true
}

// keyText is key as a string, without allocating one for the keys every
// request and list item has.
func keyText(key []byte) string {
	switch string(key) { // compared without a conversion
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "_meta":
		return "_meta"
	case "description":
		return "description"
	case "inputSchema":
		return "inputSchema"
	case "title":
		return "title"
	case "uri":
		return "uri"
	case "version":
		return "version"
	case "progressToken":
		return "progressToken"
	case MetaProtocolVersion:
		return MetaProtocolVersion
	case MetaClientCapabilities:
		return MetaClientCapabilities
	case MetaClientInfo:
		return MetaClientInfo
	}
	return string(key)
}

// ScanMembers calls f with each top-level member of obj in order (key
// without quotes, value and the whole "key":value, slices of obj), and
// reports what Members reports; f may have been called when it is false.
func ScanMembers(obj []byte, f func(key, value, span []byte)) bool {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	if i = SkipSpace(obj, i+1); i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) {
		start := i
		end, _ := StringEnd(obj, i)
		if end < 0 || !plainString(obj[start:end]) {
			return false
		}
		v := SkipSpace(obj, SkipSpace(obj, end)+1) // past the ':'
		vEnd := ValueEnd(obj, v)
		if vEnd < 0 {
			return false
		}
		f(obj[start+1:end-1], obj[v:vEnd], obj[start:vEnd])
		i = SkipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == '}' {
			return true
		}
		i = SkipSpace(obj, i+1) // past the ','
	}
	return false
}

// AppendMessage appends m as one line's JSON (without the newline) with
// the members json.Marshal writes, in its order. Raw values (id, params,
// result, error data) must be valid JSON and are copied byte for byte; one
// with a line break (whitespace between tokens) is compacted, so the
// message stays one line. The error object goes through json.Marshal.
func AppendMessage(b []byte, m *Message) ([]byte, error) {
	var err error
	b = append(b, `{"jsonrpc":`...)
	if b, err = AppendString(b, m.JSONRPC); err != nil {
		return nil, err
	}
	raw := func(name string, v json.RawMessage) {
		if len(v) == 0 || err != nil {
			return
		}
		b = append(append(append(b, ",\""...), name...), "\":"...)
		b, err = appendRaw(b, v)
	}
	raw("id", m.ID)
	if m.Method != "" {
		b = append(b, `,"method":`...)
		if b, err = AppendString(b, m.Method); err != nil {
			return nil, err
		}
	}
	raw("params", m.Params)
	raw("result", m.Result)
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		e, err := json.Marshal(m.Error)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"error":`...), e...)
	}
	return append(b, '}'), nil
}

// appendRaw appends v, valid JSON, compacted if it has a line break.
func appendRaw(b []byte, v json.RawMessage) ([]byte, error) {
	if bytes.IndexByte(v, '\n') < 0 && bytes.IndexByte(v, '\r') < 0 {
		return append(b, v...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// IsObject reports whether raw is one JSON object, as json.Unmarshal into
// a map would accept it.
func IsObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && Valid(raw)
}

// PlainText returns the text of val when it is a JSON string of printable
// ASCII without escapes.
func PlainText(val []byte) (string, bool) {
	if !plainString(val) {
		return "", false
	}
	return string(val[1 : len(val)-1]), true
}
