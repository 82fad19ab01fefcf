package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// encodeCall encodes req as the request id, with its params prepared. The
// params of an app (which may be tens of MiB) are not copied when large:
// the message is the parts to write in order, the large ones slices of
// req.Params (see wire), which the Conn writes in place.
func (s *Session) encodeCall(id uint64, req *Request, version string, c *call) ([][]byte, error) {
	size := requestHeadSize + len(req.Method) + len(`,"arguments":`)
	if len(req.Arguments) < largePart {
		size += len(req.Arguments)
	}
	if len(req.Params) < largePart {
		size += len(req.Params)
	}
	if version != "" {
		size += envelopeSize + len(version) + len(req.ClientCapabilities) + max(len(req.ClientInfo), len(s.opts.ClientInfo))
	}
	b, err := appendRequestHead(make([]byte, 0, size), id, req.Method)
	if err != nil {
		return nil, err
	}
	w := &wire{cur: b}
	if err = s.appendParams(w, req, version, c); err != nil {
		return nil, err
	}
	w.add('}')
	return w.parts(), nil
}

// largePart is the size from which a slice of an app's params is a part
// of its own in an encoded message rather than copied into it.
const largePart = 64 << 10

// wire is a message being encoded, as the parts to write in order: small
// pieces are appended to the current part; a large slice of the app's
// params (addLarge) becomes a part of its own, without a copy. The parts
// alias the request's params, which nothing modifies (Request.Params is
// read only, and a Conn writes the parts before it returns, or completes
// them on its own while the caller holds on to nothing but never writes
// them either).
type wire struct {
	done [][]byte
	cur  []byte
}

func (w *wire) add(c byte)         { w.cur = append(w.cur, c) }
func (w *wire) addString(s string) { w.cur = append(w.cur, s...) }
func (w *wire) addBytes(b []byte)  { w.cur = append(w.cur, b...) }
func (w *wire) addLarge(p []byte) {
	if len(p) < largePart {
		w.cur = append(w.cur, p...)
		return
	}
	w.done = append(w.done, w.cur, p)
	w.cur = make([]byte, 0, 64) // never appended to a part already done
}

// parts returns the message's parts.
func (w *wire) parts() [][]byte { return append(w.done, w.cur) }

// bytes returns the message as one slice (a copy when it has several parts).
func (w *wire) bytes() []byte { return joinParts(w.parts()) }

// joinParts is parts as one slice, without a copy when there is one part.
func joinParts(parts [][]byte) []byte {
	if len(parts) == 1 {
		return parts[0]
	}
	return bytes.Join(parts, nil)
}

// appendParams appends `,"params":` and the params to send for req to w
// (nothing when req has none). An app progress token is replaced by a
// token unique in the daemon ("apps' tokens must be rewritten to
// daemon-unique tokens per child ... and mapped back"), recorded in c. For
// a modern child the _meta envelope is stamped. Only the top-level keys of
// params and of _meta are decoded, never the whole tree, and the app's
// other members are written as they are, large ones without a copy.
func (s *Session) appendParams(w *wire, req *Request, version string, c *call) error {
	raw, args := req.Params, req.Arguments
	if len(raw) == 0 || string(raw) == "null" {
		raw = nil
	}
	switch {
	case version == "" && (raw == nil || !bytes.Contains(raw, []byte(`"progressToken"`))):
		// legacy fast path: nothing to rewrite
		if raw == nil && args == nil {
			return nil
		}
		w.addString(paramsKey)
		addWithArguments(w, raw, args)
		return nil
	case version != "" && s.canStampFast(raw, req.ClientInfo, req.ClientCapabilities, req.Validated):
		// modern fast path: no _meta of the app's (stampfast.go)
		w.addString(paramsKey)
		s.appendStampFast(w, raw, args, version, req.ClientInfo, req.ClientCapabilities)
		return nil
	}

	dp, err := decodeParams(raw)
	if err != nil {
		return err
	}
	rewrote, err := rewriteProgressToken(dp.meta, c)
	if err != nil {
		return err
	}
	if !rewrote && version == "" {
		w.addString(paramsKey) // nothing to rewrite after all
		addWithArguments(w, raw, args)
		return nil
	}
	if !dp.spliced {
		return s.appendReencoded(w, dp.top, dp.meta, args, version, req)
	}
	return s.appendSpliced(w, dp.members, dp.meta, args, version, req)
}

// decodedParams are an app's params with their top level and _meta
// decoded: members as written when spliced, else top as a map.
type decodedParams struct {
	members []member
	// spliced: the params can be written as members, byte for byte, after
	// a new _meta (a valid object without escaped keys or a repeated _meta).
	spliced bool
	top     map[string]json.RawMessage // when not spliced
	meta    map[string]json.RawMessage // nil when there is none
}

// decodeParams decodes the top level and the _meta of raw (nil: none);
// params or a _meta that is not an object is ErrInvalidRequest.
func decodeParams(raw []byte) (decodedParams, error) {
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
			return decodedParams{}, fmt.Errorf("%w: params must be a JSON object", ErrInvalidRequest)
		}
		metaRaw = top["_meta"]
	}
	var meta map[string]json.RawMessage
	if len(metaRaw) > 0 && string(metaRaw) != "null" {
		if err := json.Unmarshal(metaRaw, &meta); err != nil || meta == nil {
			return decodedParams{}, fmt.Errorf("%w: params._meta must be a JSON object", ErrInvalidRequest)
		}
	}
	return decodedParams{members: members, spliced: spliced, top: top, meta: meta}, nil
}

// rewriteProgressToken replaces the app's progress token in meta, if it
// has one, by a token unique in the daemon, and records both in c. It
// reports whether it did; a token that is neither a string nor an integer
// is ErrInvalidRequest.
func rewriteProgressToken(meta map[string]json.RawMessage, c *call) (bool, error) {
	t := meta["progressToken"]
	if len(t) == 0 || string(t) == "null" {
		return false, nil
	}
	if !jsonrpc.ValidProgressToken(t) {
		return false, fmt.Errorf("%w: params._meta.progressToken must be a string or an integer, got %.100s", ErrInvalidRequest, t)
	}
	c.appToken = t
	c.token = "mcpd-" + strconv.FormatUint(tokenSeq.Add(1), 10)
	meta["progressToken"] = json.RawMessage(strconv.Quote(c.token))
	return true, nil
}

// appendReencoded appends the params top, with args as "arguments" and
// meta stamped as _meta, encoded anew.
func (s *Session) appendReencoded(w *wire, top, meta map[string]json.RawMessage, args json.RawMessage, version string, req *Request) error {
	if args != nil {
		if top == nil {
			top = map[string]json.RawMessage{}
		}
		top["arguments"] = args
	}
	p, err := s.stamp(top, meta, version, req.ClientInfo, req.ClientCapabilities)
	if err != nil {
		return err
	}
	w.addString(paramsKey)
	w.addLarge(p) // encoded just now, for this message only
	return nil
}

// appendSpliced appends the params as meta stamped as _meta, then the
// app's other members byte for byte, then args as "arguments".
func (s *Session) appendSpliced(w *wire, members []member, meta map[string]json.RawMessage, args json.RawMessage, version string, req *Request) error {
	m, err := s.stampMeta(meta, version, req.ClientInfo, req.ClientCapabilities)
	if err != nil {
		return err
	}
	// {"_meta":…,<the app's other members, byte for byte>}, as the fast path writes.
	w.addString(paramsKey)
	w.addString(`{"_meta":`)
	w.addBytes(m)
	for _, mb := range members {
		if string(mb.key) != "_meta" {
			w.add(',')
			w.addLarge(mb.span)
		}
	}
	addArguments(w, args)
	w.add('}')
	return nil
}

// addWithArguments adds the object raw (nil: {}) with args, when not nil,
// as its last member, "arguments".
func addWithArguments(w *wire, raw, args json.RawMessage) {
	if args == nil {
		w.addLarge(raw)
		return
	}
	w.add('{')
	if inner := trimSpace(raw[min(1, len(raw)):max(len(raw)-1, 0)]); len(inner) > 0 {
		w.addLarge(inner)
		w.add(',')
	}
	w.addString(`"arguments":`)
	w.addLarge(args)
	w.add('}')
}

// addArguments adds `,"arguments":args` when args is not nil: the last
// member of an object that has one before it.
func addArguments(w *wire, args json.RawMessage) {
	if args != nil {
		w.addString(`,"arguments":`)
		w.addLarge(args)
	}
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
	if !jsonrpc.Valid(params) {
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

// WholeParams returns the params as the child gets them apart from the
// session's own rewriting: Params, with Arguments as their "arguments"
// member when set (then a copy).
func (r *Request) WholeParams() json.RawMessage {
	if r.Arguments == nil {
		return r.Params
	}
	raw := r.Params
	if len(raw) == 0 || string(raw) == "null" {
		raw = nil
	}
	w := &wire{}
	addWithArguments(w, raw, r.Arguments)
	return w.bytes()
}
