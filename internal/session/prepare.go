package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// encodeCall encodes req as the request id, with its params prepared, in
// one buffer sized for it: the params of an app (which may be tens of MiB)
// are copied once, straight into the message.
func (s *Session) encodeCall(id uint64, req *Request, version string, c *call) ([]byte, error) {
	size := requestHeadSize + len(req.Method) + len(req.Params)
	if version != "" {
		size += envelopeSize + len(version) + len(req.ClientCapabilities) + max(len(req.ClientInfo), len(s.opts.ClientInfo))
	}
	b, err := appendRequestHead(make([]byte, 0, size), id, req.Method)
	if err != nil {
		return nil, err
	}
	if b, err = s.appendParams(b, req, version, c); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendParams appends `,"params":` and the params to send for req to b
// (nothing when req has none). An app progress token is replaced by a
// token unique in the daemon ("apps' tokens must be rewritten to
// daemon-unique tokens per child ... and mapped back"), recorded in c. For
// a modern child the _meta envelope is stamped. Only the top-level keys of
// params and of _meta are decoded, never the whole tree, and the app's
// other members are copied as they are.
func (s *Session) appendParams(b []byte, req *Request, version string, c *call) ([]byte, error) {
	raw := req.Params
	if len(raw) == 0 || string(raw) == "null" {
		raw = nil
	}
	switch {
	case version == "" && (raw == nil || !bytes.Contains(raw, []byte(`"progressToken"`))):
		// legacy fast path: nothing to rewrite
		if raw == nil {
			return b, nil
		}
		return append(append(b, paramsKey...), raw...), nil
	case version != "" && s.canStampFast(raw, req.ClientInfo, req.ClientCapabilities, req.Validated):
		// modern fast path: no _meta of the app's (stampfast.go)
		return s.appendStampFast(append(b, paramsKey...), raw, version, req.ClientInfo, req.ClientCapabilities), nil
	}

	members, spliced := splitMembers(raw)
	var metaRaw json.RawMessage
	for _, m := range members {
		if string(m.key) == "_meta" {
			if metaRaw != nil {
				spliced = false // a repeated _meta: encoding/json's last-wins decides
			}
			metaRaw = m.val
		}
	}
	var top map[string]json.RawMessage
	if !spliced && raw != nil {
		if err := json.Unmarshal(raw, &top); err != nil || top == nil {
			return nil, fmt.Errorf("%w: params must be a JSON object", ErrInvalidRequest)
		}
		metaRaw = top["_meta"]
	}
	var meta map[string]json.RawMessage
	if len(metaRaw) > 0 && string(metaRaw) != "null" {
		if err := json.Unmarshal(metaRaw, &meta); err != nil || meta == nil {
			return nil, fmt.Errorf("%w: params._meta must be a JSON object", ErrInvalidRequest)
		}
	}
	if t := meta["progressToken"]; len(t) > 0 && string(t) != "null" {
		if !jsonrpc.ValidProgressToken(t) {
			return nil, fmt.Errorf("%w: params._meta.progressToken must be a string or an integer, got %.100s", ErrInvalidRequest, t)
		}
		c.appToken = t
		c.token = "mcpd-" + strconv.FormatUint(tokenSeq.Add(1), 10)
		meta["progressToken"] = json.RawMessage(strconv.Quote(c.token))
	} else if version == "" {
		return append(append(b, paramsKey...), raw...), nil // nothing to rewrite after all
	}
	if !spliced {
		p, err := s.stamp(top, meta, version, req.ClientInfo, req.ClientCapabilities)
		if err != nil {
			return nil, err
		}
		return append(append(b, paramsKey...), p...), nil
	}
	m, err := s.stampMeta(meta, version, req.ClientInfo, req.ClientCapabilities)
	if err != nil {
		return nil, err
	}
	// {"_meta":…,<the app's other members, byte for byte>}, as the fast path writes.
	b = append(append(append(b, paramsKey...), `{"_meta":`...), m...)
	for _, mb := range members {
		if string(mb.key) != "_meta" {
			b = append(append(b, ','), mb.span...)
		}
	}
	return append(b, '}'), nil
}

// member is one top-level member of a JSON object, as slices of it.
type member struct {
	key  []byte // without quotes; never has escapes
	val  []byte
	span []byte // "key":value, as written
}

// splitMembers returns the top-level members of params in order, without
// copying; ok is false unless params is a valid JSON object whose keys have
// no escapes (a key could spell _meta with escapes). nil params has none.
func splitMembers(params []byte) (ms []member, ok bool) {
	if params == nil {
		return nil, true
	}
	if !json.Valid(params) {
		return nil, false
	}
	i := jsonrpc.SkipSpace(params, 0)
	if params[i] != '{' {
		return nil, false
	}
	if i = jsonrpc.SkipSpace(params, i+1); params[i] == '}' {
		return nil, true
	}
	for {
		start := i
		end, escaped := jsonrpc.StringEnd(params, i) // valid JSON: a key starts here
		if escaped {
			return nil, false
		}
		i = jsonrpc.SkipSpace(params, jsonrpc.SkipSpace(params, end)+1) // past the ':'
		vEnd := jsonrpc.ValueEnd(params, i)
		if vEnd < 0 {
			return nil, false
		}
		ms = append(ms, member{key: params[start+1 : end-1], val: params[i:vEnd], span: params[start:vEnd]})
		i = jsonrpc.SkipSpace(params, vEnd)
		if params[i] == '}' {
			return ms, true
		}
		i = jsonrpc.SkipSpace(params, i+1) // past the ','
	}
}

// stamp encodes the top-level params with meta as _meta; for a modern
// version it first stamps the envelope: "Every client request's
// params._meta carries io.modelcontextprotocol/protocolVersion,
// io.modelcontextprotocol/clientCapabilities (required) and
// io.modelcontextprotocol/clientInfo (SHOULD be sent on every request)".
// The app's other _meta keys are kept.
func (s *Session) stamp(top, meta map[string]json.RawMessage, version string, clientInfo, caps json.RawMessage) (json.RawMessage, error) {
	if top == nil {
		top = map[string]json.RawMessage{}
	}
	m, err := s.stampMeta(meta, version, clientInfo, caps)
	if err != nil {
		return nil, err
	}
	top["_meta"] = m
	return json.Marshal(top)
}

// stampMeta encodes meta, with the modern envelope for a modern version
// (see stamp).
func (s *Session) stampMeta(meta map[string]json.RawMessage, version string, clientInfo, caps json.RawMessage) (json.RawMessage, error) {
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if version != "" {
		if caps == nil {
			caps = emptyObject
		}
		if clientInfo == nil {
			clientInfo = s.opts.ClientInfo
		}
		meta[jsonrpc.MetaProtocolVersion] = json.RawMessage(strconv.Quote(version))
		meta[jsonrpc.MetaClientCapabilities] = caps
		meta[jsonrpc.MetaClientInfo] = clientInfo
	}
	return json.Marshal(meta)
}
