package session

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// canStampFast reports whether the modern hot path of appendParams
// (prepare.go) applies:
// when params has no _meta member (so no progress token to rewrite and no
// app _meta keys to keep), appendStampFast splices the envelope in front
// of the app's members as bytes, instead of decoding params into a map and
// encoding it again. It is false when the general path must run: params
// holds "_meta" anywhere, or a \u escape (a key could spell _meta with
// escapes), or is not one valid JSON object, or an envelope value is not
// valid JSON.
// validated is Request.Validated: the JSON was checked already, so only
// the cheap byte tests run.
func (s *Session) canStampFast(raw, clientInfo, caps json.RawMessage, validated bool) bool {
	if raw != nil {
		if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' ||
			bytes.Contains(raw, []byte(`"_meta"`)) || bytes.Contains(raw, []byte(`\u`)) || (!validated && !jsonrpc.Valid(raw)) {
			return false
		}
	}
	if clientInfo == nil {
		clientInfo = s.opts.ClientInfo
		validated = validated && s.clientInfoValid
	}
	if validated {
		return true
	}
	return (caps == nil || jsonrpc.Valid(caps)) && jsonrpc.Valid(clientInfo)
}

// appendStampFast appends {"_meta":{…envelope…},<the app's members, byte
// for byte>[,"arguments":args]} to w, for params canStampFast accepted.
func (s *Session) appendStampFast(w *wire, raw, args json.RawMessage, version string, clientInfo, caps json.RawMessage) {
	if caps == nil {
		caps = emptyObject
	}
	if clientInfo == nil {
		clientInfo = s.opts.ClientInfo
	}
	// Keys in the order json.Marshal of the map gives them (sorted), so
	// both paths produce the same envelope.
	w.addString(`{"_meta":{"` + jsonrpc.MetaClientCapabilities + `":`)
	w.addBytes(caps)
	w.addString(`,"` + jsonrpc.MetaClientInfo + `":`)
	w.addBytes(clientInfo)
	w.addString(`,"` + jsonrpc.MetaProtocolVersion + `":`)
	w.cur = strconv.AppendQuote(w.cur, version)
	w.add('}')
	if inner := trimSpace(raw[min(1, len(raw)):max(len(raw)-1, 0)]); len(inner) > 0 {
		w.add(',')
		w.addLarge(inner)
	}
	addArguments(w, args)
	w.add('}')
}

// trimSpace trims JSON whitespace from both ends of b.
func trimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}
