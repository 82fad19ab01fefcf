package api

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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/cache"
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
	// unset, a record names the profile the call's context or metadata
	// picked (WithProfile, MetadataProfile), which the call was checked
	// against.
	ProfileOf func(ctx context.Context) string
}

// SetAudit installs the audit settings (a reload's); calls made from now
// on are recorded as they say. The caller closes a log it replaced.
func (s *Server) SetAudit(o AuditOptions) {
	s.audit.Store(&o)
}

// auditOptions are the installed audit settings.
func (s *Server) auditOptions() *AuditOptions { return s.audit.Load() }

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
func (s *Server) auditCall(ctx context.Context, server string, req *session.Request, resp *session.Response, src cache.Source, err error, start time.Time) {
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
	var p struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(req.Params, &p) // validated before the call
	rec.Name = p.Name
	if req.Method == "resources/read" {
		rec.Name = p.URI
	}
	if len(p.Arguments) > 0 {
		sum := sha256.Sum256(p.Arguments)
		rec.ArgsDigest = "sha256:" + hex.EncodeToString(sum[:])
		if opts.Arguments {
			rec.Args = p.Arguments
		}
	}
	auditOutcome(&rec, resp, err)
	// A log a reload closed meanwhile records nothing more: not a failure.
	if werr := a.Write(&rec); werr != nil && !errors.Is(werr, audit.ErrClosed) {
		s.log.Warn("audit record not written", zap.String("server", server), zap.String("method", req.Method), zap.Error(werr))
	}
}

// auditApp fills in who made the call: the name the call gave (its
// ClientInfo, which callSettings built from CallOptions.client or the
// metadata), else its connection's, and the connection's credentials.
func (s *Server) auditApp(ctx context.Context, rec *audit.Record, clientInfo json.RawMessage) {
	if p, ok := peer.FromContext(ctx); ok {
		if ai, ok := p.AuthInfo.(AuthInfo); ok {
			rec.UID, rec.Pid = ai.UID, ai.PID
		}
	}
	if len(clientInfo) > 0 {
		var ci struct{ Name, Version string }
		if json.Unmarshal(clientInfo, &ci) == nil {
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

// auditOutcome sets the outcome fields from the call's result.
func auditOutcome(rec *audit.Record, resp *session.Response, err error) {
	switch {
	case err != nil:
		rec.Outcome = audit.OutcomeError
		st, _ := status.FromError(toStatus(err))
		rec.GRPCCode, rec.Error = st.Code().String(), st.Message()
	case resp == nil:
		rec.Outcome, rec.GRPCCode = audit.OutcomeError, codes.Internal.String()
	case resp.Error != nil:
		rec.Outcome, rec.RPCCode, rec.Error = audit.OutcomeRPCError, resp.Error.Code, resp.Error.Message
		rec.GRPCCode = codes.OK.String()
	default:
		rec.Outcome, rec.GRPCCode = audit.OutcomeResult, codes.OK.String()
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
