package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// hostReq is one request of the host, decoded down to the top-level keys.
type hostReq struct {
	id     json.RawMessage
	method string
	params map[string]json.RawMessage // nil when absent
	meta   map[string]json.RawMessage // params._meta
	// modern: the request carries the per-request envelope ("a request
	// carrying modern _meta is served statelessly").
	modern  bool
	version string
	caps    json.RawMessage
	info    json.RawMessage
	// answerOnCancel: a cancelled subscriptions/listen still gets its
	// closing result.
	answerOnCancel bool
	// acked is closed once a subscriptions/listen is acknowledged, or has
	// ended; nil for other methods.
	acked chan struct{}
	bad   *jsonrpc.Error
	// members are params' members as the host wrote them, when scanned
	// (parseFast): forwardParams then forwards them byte for byte.
	members     []jsonrpc.Member
	metaMembers []jsonrpc.Member // params._meta's, likewise
	// rawParams is params as the host wrote them (a slice of its
	// message), for forwardMembers while members is set.
	rawParams json.RawMessage
	// inflight is how it is cancelled while in flight; set by
	// prepareRequest.
	inflight *inflightReq
	// endsWithBridge: it is cancelled when the bridge's life ends (an
	// HTTP request, whose context is its connection's: a modern one's
	// shared bridge, a legacy session's own). A stdio host's requests
	// piped before stdin closed are answered after.
	endsWithBridge bool
	// stamped: its result carries the bridge's serverInfo in its _meta
	// already (itemsResult), for a modern host. Set on the request's
	// goroutine.
	stamped bool
}

// ack closes acked, if any and not closed yet. Only the request's own
// goroutine calls it.
func (r *hostReq) ack() {
	if r.acked == nil {
		return
	}
	select {
	case <-r.acked:
	default:
		close(r.acked)
	}
}

// parseRequest decodes m's params (valid JSON: the line was decoded) down
// to the top-level keys and checks a modern request's envelope.
func parseRequest(m *jsonrpc.Message) *hostReq {
	r := &hostReq{id: m.ID, method: m.Method}
	if len(m.Params) > 0 && string(m.Params) != "null" {
		r.params, r.members = memberMap(m.Params)
		r.rawParams = m.Params
		if r.params == nil {
			if err := json.Unmarshal(m.Params, &r.params); err != nil || r.params == nil {
				r.bad = jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params must be an object")
				return r
			}
		}
	}
	if raw := r.params["_meta"]; len(raw) > 0 && string(raw) != "null" {
		r.meta, r.metaMembers = memberMap(raw)
		if r.meta == nil {
			r.members = nil // forwarded through the general path
			if err := json.Unmarshal(raw, &r.meta); err != nil {
				r.bad = jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params._meta must be an object")
				return r
			}
		}
	}
	_, r.modern = r.meta[jsonrpc.MetaProtocolVersion]
	if r.method == "server/discover" {
		// server/discover exists only in the modern era: its params are
		// the envelope, which it must carry like any modern request.
		r.modern = true
	}
	if r.modern {
		r.caps = r.meta[jsonrpc.MetaClientCapabilities]
		r.info = r.meta[jsonrpc.MetaClientInfo]
		r.bad = r.checkEnvelope()
		if r.bad == nil {
			r.dropEnvelope()
		}
	}
	return r
}

// dropEnvelope takes the modern envelope out of the host's message in
// place, once its members were scanned: the params are written again
// over themselves, compact between members, without the envelope's
// members (and without _meta when nothing else is in it), and r's maps
// follow. The params forwarded are then a view of the message, not a
// rewritten copy, and one that mcpd need not compact again: a large
// modern request is held once, as a legacy one is. The capabilities and
// identity, which outlive the message's use, are copied first. Only the
// request's parse calls it, before anything else reads the message,
// which is the request's own and never reused.
func (r *hostReq) dropEnvelope() {
	if r.members == nil || r.metaMembers == nil || len(r.rawParams) == 0 || r.rawParams[0] != '{' {
		return
	}
	metaAt := slices.IndexFunc(r.members, func(m jsonrpc.Member) bool { return m.Key == "_meta" })
	if metaAt < 0 || !slices.ContainsFunc(r.metaMembers, isEnvelopeMember) ||
		slices.ContainsFunc(r.members, func(m jsonrpc.Member) bool { return !within(r.rawParams, m.Span) }) ||
		slices.ContainsFunc(r.metaMembers, func(m jsonrpc.Member) bool { return !within(r.rawParams, m.Span) }) {
		return // not views of the message: forwarded through a copy
	}
	r.caps, r.info = bytes.Clone(r.caps), bytes.Clone(r.info)
	// The members, the maps and the message are rewritten in place: each
	// is the request's own, and each member is read before it is written.
	keptMeta := slices.DeleteFunc(r.metaMembers, isEnvelopeMember)
	// Every byte is written at or before where it was read: the rewrite
	// only leaves bytes out.
	w := &rewriter{buf: r.rawParams}
	members := r.members[:0]
	w.byte('{')
	for i, m := range r.members {
		if i == metaAt && len(keptMeta) == 0 {
			continue
		}
		if len(members) > 0 {
			w.byte(',')
		}
		if i != metaAt {
			members = append(members, w.member(m))
			continue
		}
		start := w.n
		w.put(m.Span[:len(m.Span)-len(m.Value)]) // "_meta":
		value := w.n
		w.byte('{')
		for j, mm := range keptMeta {
			if j > 0 {
				w.byte(',')
			}
			keptMeta[j] = w.member(mm)
		}
		w.byte('}')
		members = append(members, jsonrpc.Member{Key: m.Key, Value: w.buf[value:w.n], Span: w.buf[start:w.n]})
	}
	w.byte('}')
	r.rawParams = w.buf[:w.n]
	r.members = members
	clear(r.params)
	for _, m := range members {
		r.params[m.Key] = m.Value
	}
	r.metaMembers = nil
	if len(keptMeta) == 0 {
		r.meta = nil
		return
	}
	r.metaMembers = keptMeta
	clear(r.meta)
	for _, m := range keptMeta {
		r.meta[m.Key] = m.Value
	}
}

// rewriter writes an object over itself (dropEnvelope): n bytes of buf
// are written.
type rewriter struct {
	buf []byte
	n   int
}

func (w *rewriter) byte(c byte) {
	w.buf[w.n] = c
	w.n++
}

// put writes b, a slice of buf at or after n.
func (w *rewriter) put(b []byte) {
	if offset(w.buf, b) != w.n {
		copy(w.buf[w.n:], b)
	}
	w.n += len(b)
}

// member writes m's span and returns m where it now is.
func (w *rewriter) member(m jsonrpc.Member) jsonrpc.Member {
	start := w.n
	w.put(m.Span)
	span := w.buf[start:w.n]
	return jsonrpc.Member{Key: m.Key, Value: span[len(span)-len(m.Value):], Span: span}
}

// within reports whether span is a slice of obj's bytes.
func within(obj, span []byte) bool {
	off := offset(obj, span)
	return len(span) > 0 && off >= 0 && off+len(span) <= len(obj)
}

// offset is where span starts in obj, of which it is a slice.
func offset(obj, span []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(span))) - uintptr(unsafe.Pointer(unsafe.SliceData(obj))))
}

// checkEnvelope checks the modern per-request _meta of r: "Missing a
// required key ⇒ malformed ⇒ server must answer -32602." The version and
// the capabilities are required, the client's identity is optional (SHOULD
// be sent) but must be an Implementation object when present.
func (r *hostReq) checkEnvelope() *jsonrpc.Error {
	envelope := func() string { // for the errors only
		return fmt.Sprintf("a %s request carries params._meta with %q and %q", r.method, jsonrpc.MetaProtocolVersion, jsonrpc.MetaClientCapabilities)
	}
	v, ok := r.meta[jsonrpc.MetaProtocolVersion]
	if !ok {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing _meta field %q: %s", jsonrpc.MetaProtocolVersion, envelope())
	}
	if text, ok := jsonrpc.PlainText(v); ok {
		r.version = text
	} else if json.Unmarshal(v, &r.version) != nil {
		r.version = ""
	}
	if r.version == "" {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid _meta field %q: must be a protocol version string such as %q", jsonrpc.MetaProtocolVersion, jsonrpc.ModernVersion)
	}
	if len(r.caps) == 0 {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing _meta field %q: %s (use {} to declare none)", jsonrpc.MetaClientCapabilities, envelope())
	}
	if !isObject(r.caps) {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid _meta field %q: must be a ClientCapabilities object", jsonrpc.MetaClientCapabilities)
	}
	if len(r.info) > 0 && !hasName(r.info) {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid _meta field %q: must be an Implementation object with a name", jsonrpc.MetaClientInfo)
	}
	return nil
}

// hasName reports whether info is an object with a string "name", as
// decoding it into a struct with a *string name field would find it.
func hasName(info json.RawMessage) bool {
	if !isObject(info) {
		return false
	}
	if ms, ok := jsonrpc.Members(info); ok {
		names := 0
		var name []byte
		for _, m := range ms {
			switch {
			case m.Key == "name":
				names++
				name = m.Value
			case strings.EqualFold(m.Key, "name"):
				names = 2 // a field match only case-insensitively: general path
			}
		}
		if names == 0 {
			return false
		}
		if names == 1 {
			return name[0] == '"'
		}
	}
	var impl struct {
		Name *string `json:"name"`
	}
	return json.Unmarshal(info, &impl) == nil && impl.Name != nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool { return jsonrpc.IsObject(raw) }

// memberMap is obj's members by key, the values slices of obj, with the
// members in order; both nil unless obj is an object whose members scan
// (jsonrpc.Members) and whose keys are distinct.
func memberMap(obj json.RawMessage) (map[string]json.RawMessage, []jsonrpc.Member) {
	ms, ok := jsonrpc.Members(obj)
	if !ok {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.Key] = m.Value
	}
	if len(out) != len(ms) {
		return nil, nil // a key twice: the last wins, as json.Unmarshal has it
	}
	if ms == nil {
		ms = []jsonrpc.Member{} // {}: scanned, with no members
	}
	return out, ms
}

// removedMethods are the client requests of the legacy era that the modern
// era removed, with what replaces each (the 2026-07-28 changelog). A modern
// request for one gets -32601, as modern servers answer it.
var removedMethods = map[string]string{
	"initialize":            "use server/discover, and the per-request _meta",
	"ping":                  "any request proves liveness",
	"logging/setLevel":      `set _meta["io.modelcontextprotocol/logLevel"] on each request`,
	"resources/subscribe":   "use subscriptions/listen with resourceSubscriptions",
	"resources/unsubscribe": "cancel the subscriptions/listen",
	"tasks/list":            "tasks moved to the io.modelcontextprotocol/tasks extension, which has tasks/get",
	"tasks/result":          "tasks moved to the io.modelcontextprotocol/tasks extension, which has tasks/get",
}

// removedInModern is the error for a modern request of a removed method,
// or nil.
func removedInModern(r *hostReq) *jsonrpc.Error {
	instead, removed := removedMethods[r.method]
	if !r.modern || !removed {
		return nil
	}
	return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q was removed in protocol version %s: %s", r.method, r.version, instead)
}

// forwardParams are the request's params for mcpd: the modern envelope
// keys are dropped (mcpd stamps its own, with the host's capabilities and
// identity passed in CallOptions); everything else passes unchanged.
func (r *hostReq) forwardParams() (json.RawMessage, error) {
	if r.params == nil {
		return json.RawMessage("{}"), nil
	}
	if r.members != nil {
		return r.forwardMembers(), nil
	}
	return r.forwardMap()
}

// forwardMembers is forwardParams from the host's own bytes: its members
// in order, _meta without the envelope keys (left out when nothing else
// is in it). Params without envelope keys, which are all of them once
// dropEnvelope took a modern request's out, are forwarded as the host
// wrote them, without a copy: a large tools/call is then held once, as
// its message.
func (r *hostReq) forwardMembers() json.RawMessage {
	if r.meta == nil || len(r.metaMembers) > 0 && !slices.ContainsFunc(r.metaMembers, isEnvelopeMember) {
		return r.rawParams // nothing to leave out
	}
	n := 2
	for _, m := range r.members {
		n += len(m.Span) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for _, m := range r.members {
		if m.Key == "_meta" && r.meta != nil {
			out = r.appendMeta(out)
			continue
		}
		out = appendMember(out, m.Span)
	}
	return append(out, '}')
}

// appendMeta appends "_meta" with the envelope keys left out, or nothing
// when nothing else is in it.
func (r *hostReq) appendMeta(out []byte) []byte {
	start := len(out)
	for _, m := range r.metaMembers {
		switch m.Key {
		case jsonrpc.MetaProtocolVersion, jsonrpc.MetaClientCapabilities, jsonrpc.MetaClientInfo:
			continue
		}
		if len(out) == start {
			out = appendMember(out, []byte(`"_meta":{`))
			out = append(out, m.Span...)
			continue
		}
		out = append(append(out, ','), m.Span...)
	}
	if len(out) == start {
		return out
	}
	return append(out, '}')
}

// isEnvelopeMember reports whether m is a key of the modern envelope,
// which mcpd stamps itself.
func isEnvelopeMember(m jsonrpc.Member) bool {
	switch m.Key {
	case jsonrpc.MetaProtocolVersion, jsonrpc.MetaClientCapabilities, jsonrpc.MetaClientInfo:
		return true
	}
	return false
}

// appendMember appends span after a comma unless it is the object's first.
func appendMember(out, span []byte) []byte {
	if out[len(out)-1] != '{' {
		out = append(out, ',')
	}
	return append(out, span...)
}

// forwardMap is forwardParams from the decoded maps: the general path,
// for params changed since the host sent them.
func (r *hostReq) forwardMap() (json.RawMessage, error) {
	if r.params == nil {
		return json.RawMessage("{}"), nil
	}
	top := make(map[string]json.RawMessage, len(r.params))
	for k, v := range r.params {
		top[k] = v
	}
	if r.meta != nil {
		meta := map[string]json.RawMessage{}
		for k, v := range r.meta {
			switch k {
			case jsonrpc.MetaProtocolVersion, jsonrpc.MetaClientCapabilities, jsonrpc.MetaClientInfo:
			default:
				meta[k] = v
			}
		}
		delete(top, "_meta")
		if len(meta) > 0 {
			b, err := json.Marshal(meta)
			if err != nil {
				return nil, err
			}
			top["_meta"] = b
		}
	}
	return json.Marshal(top)
}

// alsoHeldKey is the context key of withAlsoHeld.
type alsoHeldKey struct{}

// withAlsoHeld marks a call whose host message stays held, n bytes of it
// (its params), besides the params sent for it, because those are a
// rewritten copy rather than a view of it (forwardParams).
func withAlsoHeld(ctx context.Context, n int64) context.Context {
	if n <= 0 {
		return ctx
	}
	return context.WithValue(ctx, alsoHeldKey{}, n)
}

// AlsoHeld returns how many bytes of a host's message a call from ctx
// holds besides the request it sends (withAlsoHeld): mcpd's in-process
// backend has the request memory budget charge them.
func AlsoHeld(ctx context.Context) int64 {
	n, _ := ctx.Value(alsoHeldKey{}).(int64)
	return n
}

// alsoHeld is how many bytes of the host's message r holds besides
// params, the params sent for it: none when params are a view of the
// message, else the message's params.
func (r *hostReq) alsoHeld(params json.RawMessage) int64 {
	if len(r.rawParams) == 0 || len(params) > 0 && unsafe.SliceData(params) == unsafe.SliceData(r.rawParams) {
		return 0
	}
	return int64(len(r.rawParams))
}
