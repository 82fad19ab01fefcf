package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// withResultType adds resultType "complete" to a legacy child's result
// for a modern host ("an absent one [is treated] as complete", but modern
// results carry it).
func withResultType(res json.RawMessage) json.RawMessage {
	has := false
	if jsonrpc.ScanMembers(res, func(key, _, _ []byte) { has = has || string(key) == "resultType" }) {
		// The result as mcpd passed it, byte for byte, with resultType
		// first if it has none.
		if has {
			return res
		}
		return spliceFirst(res, `"resultType":"complete"`)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(res, &top) != nil || top == nil {
		return res
	}
	if _, ok := top["resultType"]; ok {
		return res
	}
	top["resultType"] = json.RawMessage(`"complete"`)
	out, err := json.Marshal(top)
	if err != nil {
		return res
	}
	return out
}

// modernMarkers are the names of what a legacy result lacks: "Legacy
// results have no resultType, ttlMs or cacheScope", nor the serverInfo a
// modern server stamps into every result's _meta.
var modernMarkers = [][]byte{[]byte(`"resultType"`), []byte(`"ttlMs"`), []byte(`"cacheScope"`), []byte(`"` + jsonrpc.MetaServerInfo + `"`)}

// forLegacyHost is res, a modern child's result, as a legacy result: without
// resultType "complete", ttlMs, cacheScope and _meta's serverInfo (an
// empty _meta goes too). Any other member is kept byte for byte, and a
// result that has none of these is returned as it is.
func forLegacyHost(res json.RawMessage) json.RawMessage {
	if !slices.ContainsFunc(modernMarkers, func(m []byte) bool { return bytes.Contains(res, m) }) {
		return res
	}
	members, ok := jsonrpc.Members(res)
	if !ok {
		return res
	}
	kept := make([][]byte, 0, len(members))
	for _, m := range members {
		span := m.Span
		switch m.Key {
		case "resultType":
			if string(m.Value) == `"complete"` {
				continue
			}
		case "ttlMs", "cacheScope":
			continue
		case "_meta":
			meta, empty := withoutMember(m.Value, jsonrpc.MetaServerInfo)
			if empty {
				continue
			}
			span = append([]byte(`"_meta":`), meta...)
		}
		kept = append(kept, span)
	}
	return objectOf(kept, len(res))
}

// withoutMember is obj without its member key, and whether nothing is left;
// an obj that is not an object with plain keys is returned as it is.
func withoutMember(obj []byte, key string) ([]byte, bool) {
	members, ok := jsonrpc.Members(obj)
	if !ok {
		return obj, false
	}
	kept := make([][]byte, 0, len(members))
	for _, m := range members {
		if m.Key != key {
			kept = append(kept, m.Span)
		}
	}
	return objectOf(kept, len(obj)), len(kept) == 0
}

// objectOf is the JSON object of members ("key":value spans), for an
// output of about size bytes.
func objectOf(members [][]byte, size int) []byte {
	out := make([]byte, 0, size+2)
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, '}')
}

// withServerInfo is res, a result for a modern host, with info as its
// _meta's serverInfo ("Servers should put io.modelcontextprotocol/serverInfo
// into every result's _meta"). keepOwn keeps one the result has (a single
// server's child says what the bridge says of itself); else the bridge's
// replaces it. Every other member is kept byte for byte.
func withServerInfo(res, info json.RawMessage, keepOwn bool) json.RawMessage {
	if keepOwn && bytes.Contains(res, []byte(`"`+jsonrpc.MetaServerInfo+`"`)) {
		return res
	}
	members, ok := jsonrpc.Members(res)
	if !ok {
		return res
	}
	stamp := append([]byte(`"`+jsonrpc.MetaServerInfo+`":`), info...)
	out := make([]byte, 0, len(res)+len(stamp)+16)
	out = append(out, '{')
	hadMeta := false
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		if m.Key != "_meta" {
			out = append(out, m.Span...)
			continue
		}
		hadMeta = true
		meta, _ := withoutMember(m.Value, jsonrpc.MetaServerInfo)
		if !jsonrpc.IsObject(meta) {
			out = append(out, m.Span...) // not an object: left as it is
			continue
		}
		out = append(append(out, `"_meta":`...), spliceFirst(meta, string(stamp))...)
	}
	if !hadMeta {
		if len(members) > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, `"_meta":{`...), stamp...), '}')
	}
	return append(out, '}')
}

// withCacheHints adds the caching hints a legacy child's complete
// resources/read result lacks for a modern host: such results "must carry
// ttlMs and cacheScope". The defaults are the safe ones: ttlMs 0, "stale
// immediately", and cacheScope "private", reuse only within the same
// authorization context (mcpd caches, so the host need not). An
// input_required result never carries them.
func withCacheHints(res json.RawMessage) json.RawMessage {
	var complete, hasTTL, hasScope bool
	if jsonrpc.ScanMembers(res, func(key, value, _ []byte) {
		switch string(key) {
		case "resultType":
			complete = string(value) == `"complete"`
		case "ttlMs":
			hasTTL = true
		case "cacheScope":
			hasScope = true
		}
	}) {
		switch {
		case !complete || hasTTL && hasScope:
			return res
		case hasTTL:
			return spliceFirst(res, `"cacheScope":"private"`)
		case hasScope:
			return spliceFirst(res, `"ttlMs":0`)
		}
		return spliceFirst(res, `"cacheScope":"private","ttlMs":0`)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(res, &top) != nil || top == nil || string(top["resultType"]) != `"complete"` {
		return res
	}
	_, hasTTL = top["ttlMs"]
	_, hasScope = top["cacheScope"]
	if hasTTL && hasScope {
		return res
	}
	if !hasTTL {
		top["ttlMs"] = json.RawMessage("0")
	}
	if !hasScope {
		top["cacheScope"] = json.RawMessage(`"private"`)
	}
	out, err := json.Marshal(top)
	if err != nil {
		return res
	}
	return out
}

// spliceFirst returns obj, a JSON object, with members (one or more,
// comma-separated) inserted first.
func spliceFirst(obj json.RawMessage, members string) json.RawMessage {
	i := jsonrpc.SkipSpace(obj, 0) + 1 // past the '{'
	out := make([]byte, 0, len(obj)+len(members)+2)
	out = append(append(out, '{'), members...)
	if rest := jsonrpc.SkipSpace(obj, i); rest < len(obj) && obj[rest] != '}' {
		out = append(out, ',')
	}
	return append(out, obj[i:]...)
}

// fulfil handles an input_required result. A modern host gets it
// unchanged and retries itself. For a legacy host the bridge sends the
// host the equivalent requests and reports, with again, that the request
// must be retried with params now holding inputResponses and requestState.
func (b *bridge) fulfil(ctx context.Context, r *hostReq, res json.RawMessage, params map[string]json.RawMessage, round int) (json.RawMessage, bool, *jsonrpc.Error) {
	if r.modern {
		return res, false, nil
	}
	var ir struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState *string `json:"requestState"`
	}
	if json.Unmarshal(res, &ir) != nil || ir.ResultType != "input_required" {
		return res, false, nil
	}
	if round+1 >= maxInputRounds {
		return nil, false, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the server still asks for input after %d rounds", maxInputRounds)
	}
	b.mu.Lock()
	caps := b.hostCaps
	b.mu.Unlock()
	responses := map[string]json.RawMessage{}
	for key, in := range ir.InputRequests {
		if !hostAnswers(caps, in.Method, in.Params) {
			return nil, false, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the server needs %s, and this client did not declare the %s capability",
				requestKind(in.Method, in.Params), capabilityName(in.Method, in.Params))
		}
		ans, rerr := b.hostRequest(ctx, in.Method, in.Params)
		if rerr != nil {
			return nil, false, rerr
		}
		responses[key] = ans
	}
	// "Client retry (a new JSON-RPC request with a new id, same method and
	// params, plus inputResponses and requestState: the exact string
	// received (omit it if none was received))."
	params["inputResponses"], _ = json.Marshal(responses)
	delete(params, "requestState")
	if ir.RequestState != nil {
		params["requestState"] = json.RawMessage(strconv.Quote(*ir.RequestState))
	}
	return nil, true, nil
}

// hostAnswers reports whether the host's capabilities answer a request
// of method with params: hostDeclares, and for an elicitation in url mode
// the url mode declared ("elicitation: {form?: {}, url?: {}}"; an empty
// elicitation object means form only).
func hostAnswers(caps json.RawMessage, method string, params json.RawMessage) bool {
	if !hostDeclares(caps, method) {
		return false
	}
	if method == "elicitation/create" && isURLElicitation(params) {
		return declaresURLElicitation(caps)
	}
	return true
}

// isURLElicitation reports whether elicitation/create params ask for the
// url mode.
func isURLElicitation(params json.RawMessage) bool {
	var p struct {
		Mode string `json:"mode"`
	}
	return json.Unmarshal(params, &p) == nil && p.Mode == "url"
}

// declaresURLElicitation reports whether caps declare elicitation.url.
func declaresURLElicitation(caps json.RawMessage) bool {
	var c struct {
		Elicitation map[string]json.RawMessage `json:"elicitation"`
	}
	if isEmptyObject(caps) || json.Unmarshal(caps, &c) != nil {
		return false
	}
	v, ok := c.Elicitation["url"]
	return ok && string(v) != "null"
}

// requestKind names a request a server sends its client, for errors: its
// method, with the mode of an elicitation in url mode.
func requestKind(method string, params json.RawMessage) string {
	if method == "elicitation/create" && isURLElicitation(params) {
		return "elicitation/create (url mode)"
	}
	return method
}

// capabilityName is the client capability that answers a request, for
// errors ("elicitation.url" for an elicitation in url mode).
func capabilityName(method string, params json.RawMessage) string {
	if method == "elicitation/create" && isURLElicitation(params) {
		return "elicitation.url"
	}
	if k := capabilityKeys[method]; k != "" {
		return k
	}
	return method
}

// hostDeclares reports whether the host's capabilities answer method.
func hostDeclares(caps json.RawMessage, method string) bool {
	key := capabilityKeys[method]
	if key == "" {
		return false
	}
	if isEmptyObject(caps) {
		return false
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	v, ok := c[key]
	return ok && string(v) != "null"
}

// isEmptyObject reports whether raw is {} (with any whitespace): the
// capabilities most hosts declare, which answer nothing.
func isEmptyObject(raw json.RawMessage) bool {
	i := jsonrpc.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = jsonrpc.SkipSpace(raw, i+1)
	return i < len(raw) && raw[i] == '}' && jsonrpc.SkipSpace(raw, i+1) == len(raw)
}
