package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// AuditOptions configure the audit log of the calls of apps.
type AuditOptions struct {
	// Log receives one record per tools/call, prompts/get and
	// resources/read; nil: no audit log.
	Log *audit.Log
	// Arguments records the full arguments beside their digest.
	Arguments bool
	// ProfileOf, if set, names the profile a call is served under;
	// unset, a record names the profile the call's context picked
	// (WithProfile), which the call was checked against.
	ProfileOf func(ctx context.Context) string
}

// SetAudit installs the audit settings (a reload's); calls made from now
// on are recorded as they say. The caller closes a log it replaced.
func (s *Service) SetAudit(o AuditOptions) {
	s.audit.Store(&o)
}

// auditOptions are the installed audit settings.
func (s *Service) auditOptions() *AuditOptions { return s.audit.Load() }

// auditedMethods are the MCP methods that get an audit record.
var auditedMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// bridgeClientName is how mcpdctl bridge names itself when its host gave
// no name; with one it appends bridgeClientSuffix (internal/bridge).
const (
	bridgeClientName   = "mcpdctl-bridge"
	bridgeClientSuffix = " (mcpdctl bridge)"
)

// auditCall writes the record of one call, before its answer goes to the
// app. A failed write is logged and the call answered: the log is for
// review, and a full disk must not stop every app.
func (s *Service) auditCall(ctx context.Context, server string, req *session.Request, resp *session.Response, src cache.Source, err error, start time.Time) {
	opts := s.auditOptions()
	a := opts.Log
	if a == nil || !auditedMethods[req.Method] {
		return
	}
	rec := audit.Record{Time: start.UTC(), Server: server, Method: req.Method, UID: -1, Front: audit.FrontGRPC,
		DurationUs: time.Since(start).Microseconds(), Cache: cacheName(src)}
	s.auditApp(ctx, &rec, req.ClientInfo)
	if opts.ProfileOf != nil {
		rec.Profile = opts.ProfileOf(ctx)
	} else {
		rec.Profile = profileName(ctx)
	}
	name, uri, args := callFields(req.Params)
	if req.Arguments != nil {
		args = req.Arguments
	}
	rec.Name = name
	if req.Method == "resources/read" {
		rec.Name = uri
	}
	if len(args) > 0 {
		rec.ArgsDigest = argsDigest(args)
		if opts.Arguments {
			rec.Args = args
		}
	}
	auditOutcome(&rec, resp, err)
	// A log a reload closed meanwhile records nothing more: not a failure.
	switch werr := a.Write(&rec); {
	case werr == nil, errors.Is(werr, audit.ErrClosed):
	case errors.Is(werr, audit.ErrNotRotated): // written; the next try is in a while
		s.log.Warn("audit log could not be rotated", zap.String("path", a.Path()), zap.Error(werr))
	default:
		s.log.Warn("audit record not written", zap.String("server", server), zap.String("method", req.Method), zap.Error(werr))
	}
}

// argsDigest is "sha256:" and the hex SHA-256 of args, made with one
// allocation (it is on every audited call's path).
func argsDigest(args []byte) string {
	const prefix = "sha256:"
	sum := sha256.Sum256(args)
	var b [len(prefix) + 2*sha256.Size]byte
	copy(b[:], prefix)
	hex.Encode(b[len(prefix):], sum[:])
	return string(b[:])
}

// callFields are the name, uri and arguments of a call's params (valid
// JSON), as decoding them into a struct gives them.
func callFields(params json.RawMessage) (name, uri string, args json.RawMessage) {
	if f, ok := plainFields(params, "name", "uri", "arguments"); ok {
		return string(f[0]), string(f[1]), f[2]
	}
	var p struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p) // validated before the call
	return p.Name, p.URI, p.Arguments
}

// auditApp fills in who made the call: the name the call gave (its
// ClientInfo, which settings built from its options' client or the name
// its door gave, WithClient), else its connection's, and the connection's credentials.
func (s *Service) auditApp(ctx context.Context, rec *audit.Record, clientInfo json.RawMessage) {
	if c := connFromContext(ctx); c != nil {
		rec.UID, rec.Pid = c.uid, c.pid
	}
	if len(clientInfo) > 0 {
		if f, ok := plainFields(clientInfo, "name", "version"); ok {
			rec.App, rec.Version = string(f[0]), string(f[1])
		} else if ci := (struct{ Name, Version string }{}); json.Unmarshal(clientInfo, &ci) == nil {
			rec.App, rec.Version = ci.Name, ci.Version
		}
	}
	c := connFromContext(ctx)
	if c == nil {
		return
	}
	if rec.App == "" {
		c.mu.Lock()
		rec.App, rec.Version = c.name, c.version
		c.mu.Unlock()
	}
	switch {
	case c.transport == TransportHTTP:
		rec.Front = audit.FrontHTTP
	case rec.App == bridgeClientName || strings.HasSuffix(rec.App, bridgeClientSuffix):
		rec.Front = audit.FrontBridge
	}
}

// codeOK is the audit's code of a call that was answered, gRPC's name of
// its OK.
const codeOK = "OK"

// auditOutcome sets the outcome fields from the call's result.
func auditOutcome(rec *audit.Record, resp *session.Response, err error) {
	switch {
	case err != nil:
		rec.Outcome = audit.OutcomeError
		err = ToError(err)
		rec.GRPCCode, rec.Error = service.ErrorOf(err).Code.String(), err.Error()
	case resp == nil:
		rec.Outcome, rec.GRPCCode = audit.OutcomeError, service.Internal.String()
	case resp.Error != nil:
		rec.Outcome, rec.RPCCode, rec.Error = audit.OutcomeRPCError, resp.Error.Code, resp.Error.Message
		rec.GRPCCode = codeOK
	default:
		rec.Outcome, rec.GRPCCode = audit.OutcomeResult, codeOK
		if rec.Method == "tools/call" && isToolError(resp.Result) {
			rec.Outcome = audit.OutcomeToolError
		}
	}
}

// isToolError reports whether a tools/call result has isError true; only a
// result that mentions isError is decoded.
func isToolError(result json.RawMessage) bool {
	if !bytes.Contains(result, []byte(`"isError"`)) {
		return false
	}
	// Most results say "isError":false: the member is found by the
	// scanner (decoding the result was 5% of mcpd's CPU per call), unless
	// decoding could tell another story (a key that differs only in case,
	// escapes in keys), which is then what decides.
	var val []byte
	odd := false
	ok := jsonrpc.ScanMembers(result, func(key, value, _ []byte) {
		switch {
		case string(key) == "isError":
			val = value // the last one, as decoding takes
		case strings.EqualFold(string(key), "isError"):
			odd = true
		}
	})
	if ok && !odd {
		return string(val) == "true"
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

func cacheName(src cache.Source) string {
	switch src {
	case cache.SourceHit:
		return "hit"
	case cache.SourceCoalesced:
		return "coalesced"
	}
	return "fetched"
}

// plainFields picks the members keys of JSON object obj (valid JSON) as
// decoding it into a struct with those fields would, without decoding:
// vals[i] is the member keys[i]'s raw value for "arguments", the text of
// its plain string for the others (nil when absent). ok is false when
// decoding could tell another story (obj is not an object, a key differs
// from one of keys only in case, a string has escapes or is not a string,
// arguments is null), and the caller decodes instead.
func plainFields(obj []byte, keys ...string) (vals [][]byte, ok bool) {
	vals = make([][]byte, len(keys))
	odd := false
	ok = jsonrpc.ScanMembers(obj, func(key, value, _ []byte) {
		for i, k := range keys {
			switch {
			case string(key) == k && k == "arguments":
				odd = odd || string(value) == "null"
				vals[i] = value
			case string(key) == k:
				_, plain := jsonrpc.PlainText(value)
				odd = odd || !plain
				if plain {
					vals[i] = value[1 : len(value)-1]
				}
			case strings.EqualFold(string(key), k):
				odd = true
			}
		}
	})
	return vals, ok && !odd
}
