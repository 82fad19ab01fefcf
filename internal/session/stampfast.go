package session

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// stampFast is the modern hot path of prepare: when params has no _meta
// member (so no progress token to rewrite and no app _meta keys to keep),
// the envelope is spliced in front of the app's members as bytes, instead
// of decoding params into a map and encoding it again. It reports false
// when the general path must run: params holds "_meta" anywhere, or a \u
// escape (a key could spell _meta with escapes), or is not one valid JSON
// object, or an envelope value is not valid JSON.
//
// The result is {"_meta":{…envelope…},<the app's members, byte for byte>}.
func (s *Session) stampFast(raw json.RawMessage, version string, clientInfo, caps json.RawMessage) (json.RawMessage, bool) {
	if raw != nil {
		if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' ||
			bytes.Contains(raw, []byte(`"_meta"`)) || bytes.Contains(raw, []byte(`\u`)) || !json.Valid(raw) {
			return nil, false
		}
	}
	if caps == nil {
		caps = emptyObject
	}
	if clientInfo == nil {
		clientInfo = s.opts.ClientInfo
	}
	if !json.Valid(caps) || !json.Valid(clientInfo) {
		return nil, false
	}
	// Keys in the order json.Marshal of the map gives them (sorted), so
	// both paths produce the same envelope.
	b := make([]byte, 0, len(raw)+len(caps)+len(clientInfo)+160)
	b = append(b, `{"_meta":{"`+metaClientCapabilities+`":`...)
	b = append(b, caps...)
	b = append(b, `,"`+metaClientInfo+`":`...)
	b = append(b, clientInfo...)
	b = append(b, `,"`+metaProtocolVersion+`":`...)
	b = strconv.AppendQuote(b, version)
	b = append(b, '}')
	if inner := trimSpace(raw[min(1, len(raw)):max(len(raw)-1, 0)]); len(inner) > 0 {
		b = append(b, ',')
		b = append(b, inner...)
	}
	return append(b, '}'), true
}

// trimSpace trims JSON whitespace from both ends of b.
func trimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}
