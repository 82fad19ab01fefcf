package core

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// settings turns the per-call options into the request fields the session
// needs and the supervisor's call options. It also records the app's
// identity on its connection for GetStatus.
func (s *Service) settings(ctx context.Context, o service.Options) (*session.Request, supervisor.CallOptions, error) {
	var copts supervisor.CallOptions
	if o.Timeout < 0 {
		return nil, copts, codeError(service.InvalidArgument, "invalid options.timeout_ms: %d is negative", o.Timeout.Milliseconds())
	}
	copts.Timeout = o.Timeout
	req := &session.Request{}
	caps, err := JSONObject("options.client_capabilities_json", o.ClientCapabilities)
	if err != nil {
		return nil, copts, err
	}
	req.ClientCapabilities = caps

	name, ver := clientIdentityOf(ctx, o.Client.Name, o.Client.Version)
	if name != "" {
		// Implementation: "name" and "version" are both required members.
		info, err := implementation(name, ver)
		if err != nil {
			return nil, copts, codeError(service.Internal, "encode client info: %v", err)
		}
		req.ClientInfo = info
		if c := connFromContext(ctx); c != nil {
			c.setClient(name, ver)
		}
	}
	return req, copts, nil
}

// implementation is the Implementation object of name and version, as
// json.Marshal writes it, without its reflection on every call.
func implementation(name, version string) (json.RawMessage, error) {
	b := make([]byte, 0, len(`{"name":,"version":}`)+len(name)+len(version)+4)
	b, err := jsonrpc.AppendString(append(b, `{"name":`...), name)
	if err != nil {
		return nil, err
	}
	b, err = jsonrpc.AppendString(append(b, `,"version":`...), version)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// JSONObject validates a request's field (named field in errors) that
// must hold a JSON object and returns it compacted (one line, as stdio
// framing needs); empty means absent (nil). Anything else is
// INVALID_ARGUMENT naming the field. src is never written to: text that is
// already compact, as apps' JSON encoders write it, is returned as a view
// of src, not a copy (a field can be tens of MiB).
func JSONObject(field string, src []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		return nil, nil
	}
	if !jsonrpc.Valid(src) {
		var buf bytes.Buffer
		err := json.Compact(&buf, src) // for its error, which names the offset
		return nil, codeError(service.InvalidArgument, "invalid %s: %v", field, err)
	}
	out := src
	if !isCompact(src) {
		buf := bytes.NewBuffer(make([]byte, 0, len(src))) // one allocation: compact JSON is never longer
		if err := json.Compact(buf, src); err != nil {
			return nil, codeError(service.InvalidArgument, "invalid %s: %v", field, err)
		}
		out = buf.Bytes()
	}
	if out[0] != '{' {
		return nil, codeError(service.InvalidArgument, "invalid %s: must be a JSON object", field)
	}
	return out, nil
}

// isCompact reports whether b, valid JSON, has no whitespace outside its
// strings, that is whether json.Compact would return it unchanged.
func isCompact(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped character
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// metaObjectBytes validates the _meta object named field as
// JSONObject does, and its progress token if it has one (a string or
// an integer, as MCP requires).
func metaObjectBytes(field string, src []byte) (json.RawMessage, error) {
	meta, err := JSONObject(field, src)
	if err != nil || !bytes.Contains(meta, []byte(`"progressToken"`)) {
		return meta, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(meta, &top); err != nil {
		return nil, codeError(service.InvalidArgument, "invalid %s: %v", field, err)
	}
	if t, ok := top["progressToken"]; ok && string(t) != "null" && !jsonrpc.ValidProgressToken(t) {
		return nil, codeError(service.InvalidArgument, "invalid %s: progressToken must be a string or an integer, got %.100s", field, t)
	}
	return meta, nil
}

// hasProgressToken reports whether meta (metaObject's output) has a
// non-null progressToken member.
func hasProgressToken(meta json.RawMessage) bool {
	if !bytes.Contains(meta, []byte(`"progressToken"`)) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(meta, &top) != nil {
		return false
	}
	t, ok := top["progressToken"]
	return ok && string(t) != "null"
}
