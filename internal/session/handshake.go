package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Handshake negotiates the era (server/discover, else initialize) and returns what it
// learned. On a child that exits right after the probe it returns an error
// wrapping ErrExitedAfterProbe.
func (s *Session) Handshake(ctx context.Context) (Info, error) {
	var (
		info Info
		err  error
	)
	switch s.opts.Protocol {
	case ProtocolLegacy:
		info, err = s.initialize(ctx)
	case ProtocolModern:
		var legacy bool
		info, legacy, err = s.discover(ctx)
		switch {
		case err == nil && legacy:
			err = s.handshakeErrorf("server/discover failed and protocol is modern")
		case errors.Is(err, ErrClosed):
			err = s.handshakeErrorf("%w", err)
		}
	case ProtocolAuto:
		var legacy bool
		info, legacy, err = s.discover(ctx)
		if errors.Is(err, ErrClosed) && ctx.Err() == nil {
			// "A daemon can instead treat 'child exited right after the
			// probe' as 'legacy' and restart it straight into initialize."
			return Info{}, fmt.Errorf("%w: server %q: %w", ErrExitedAfterProbe, s.opts.Server, err)
		}
		if err == nil && legacy {
			info, err = s.initialize(ctx)
			if errors.Is(err, ErrClosed) && ctx.Err() == nil {
				return Info{}, fmt.Errorf("%w: server %q: %w", ErrExitedAfterProbe, s.opts.Server, err)
			}
		}
	default:
		return Info{}, s.handshakeErrorf("unknown protocol %q", s.opts.Protocol)
	}
	if err != nil {
		return Info{}, err
	}
	s.info.Store(&info)
	s.log.Debug("handshake done", zap.String("era", string(info.Era)), zap.String("protocol_version", info.ProtocolVersion))
	return info, nil
}

// discover sends the server/discover probe. It reports legacy=true when the
// answer says the child is not modern ("Any other error, or no answer within
// a reasonable timeout → server is legacy").
func (s *Session) discover(ctx context.Context) (info Info, legacy bool, err error) {
	version := jsonrpc.ModernVersion
	for attempt := 0; ; attempt++ {
		resp, err := s.probe(ctx, version)
		switch {
		case err != nil && ctx.Err() != nil:
			return Info{}, false, fmt.Errorf("server/discover: %w", ctx.Err())
		case errors.Is(err, context.DeadlineExceeded) && attempt > 0:
			// The child is modern (it sent -32022); no fallback.
			return Info{}, false, s.handshakeErrorf("discover with %s: %w", version, err)
		case errors.Is(err, context.DeadlineExceeded):
			s.log.Debug("discover probe timed out", zap.Duration("timeout", s.opts.DiscoverTimeout))
			return Info{}, true, nil
		case err != nil:
			return Info{}, false, fmt.Errorf("server/discover: %w", err)
		case resp.Error != nil && resp.Error.Code == jsonrpc.CodeUnsupportedProtocolVersion && attempt == 0:
			// "-32022 UnsupportedProtocolVersion → server is modern but not
			// at that version; retry with one of error.data.supported. Do
			// not fall back to initialize."
			var data struct {
				Supported []string `json:"supported"`
			}
			_ = json.Unmarshal(resp.Error.Data, &data)
			v, ok := pickModern(data.Supported)
			if !ok {
				return Info{}, false, s.handshakeErrorf("no mutually supported modern version in %q",
					data.Supported)
			}
			version = v
			continue
		case resp.Error != nil && resp.Error.Code == jsonrpc.CodeUnsupportedProtocolVersion:
			return Info{}, false, s.handshakeErrorf("discover with %s: %w", version, resp.Error)
		case resp.Error != nil && attempt > 0:
			return Info{}, false, s.handshakeErrorf("discover with %s: %w", version, resp.Error)
		case resp.Error != nil:
			s.log.Debug("discover probe rejected", zap.Int64("code", resp.Error.Code), zap.String("message", resp.Error.Message))
			return Info{}, true, nil
		}
		return s.discoverInfo(resp.Result, version)
	}
}

// probe sends one server/discover request with version in the envelope,
// bounded by the discover timeout. The probe is not cancelled on timeout: "a
// strict legacy server may dislike any pre-initialize traffic, so treat it
// as optional".
func (s *Session) probe(ctx context.Context, version string) (*Response, error) {
	pctx, cancel := context.WithTimeout(ctx, s.opts.DiscoverTimeout)
	defer cancel()
	params, err := s.stamp(nil, nil, version, nil, nil)
	if err != nil {
		return nil, err
	}
	return s.roundTrip(pctx, "server/discover", params, nil, false)
}

func (s *Session) discoverInfo(result json.RawMessage, requested string) (Info, bool, error) {
	var r struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return Info{}, false, s.handshakeErrorf("decode discover result: %w", err)
	}
	// "DiscoverResult → server is modern; choose a version from
	// supportedVersions that both support; stay modern."
	version := requested
	if !slices.Contains(r.SupportedVersions, requested) {
		v, ok := pickModern(r.SupportedVersions)
		if !ok && s.opts.Protocol == ProtocolAuto {
			// A server that answers discover but lists only legacy
			// versions (the Go SDK's stateful HTTP handler), or none (a
			// legacy server answering every unknown method with an empty
			// result), is legacy.
			s.log.Debug("discover lists no modern version; using initialize", zap.Strings("supported", r.SupportedVersions))
			return Info{}, true, nil
		}
		if !ok {
			return Info{}, false, s.handshakeErrorf("no mutually supported modern version in %q",
				r.SupportedVersions)
		}
		version = v
	}
	return Info{
		Era:               EraModern,
		ProtocolVersion:   version,
		ServerInfo:        r.Meta[jsonrpc.MetaServerInfo],
		Capabilities:      r.Capabilities,
		Instructions:      r.Instructions,
		SupportedVersions: r.SupportedVersions,
	}, false, nil
}

// pickModern returns jsonrpc.ModernVersion if listed, else the newest listed version
// not older than jsonrpc.ModernVersion (versions are ISO dates and compare
// lexicographically; "unknown later dates are treated as modern").
func pickModern(versions []string) (string, bool) {
	if slices.Contains(versions, jsonrpc.ModernVersion) {
		return jsonrpc.ModernVersion, true
	}
	best := ""
	for _, v := range versions {
		if v >= jsonrpc.ModernVersion && v > best {
			best = v
		}
	}
	return best, best != ""
}

// initialize runs the legacy handshake: initialize, then
// notifications/initialized. "Must be the first interaction; must not be
// cancelled": it is bounded by ctx but never followed by
// notifications/cancelled.
func (s *Session) initialize(ctx context.Context) (Info, error) {
	params, err := json.Marshal(map[string]json.RawMessage{
		"protocolVersion": json.RawMessage(strconv.Quote(jsonrpc.LegacyVersion)),
		"capabilities":    s.opts.Capabilities,
		"clientInfo":      s.opts.ClientInfo,
	})
	if err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	resp, err := s.roundTrip(ctx, "initialize", params, nil, false)
	if err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	if resp.Error != nil {
		return Info{}, s.handshakeErrorf("initialize: %w", resp.Error)
	}
	var r struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		return Info{}, s.handshakeErrorf("decode initialize result: %w", err)
	}
	if r.ProtocolVersion == "" {
		return Info{}, s.handshakeErrorf("initialize result has no protocolVersion")
	}
	// "After a successful initialize result the client must send
	// notifications/initialized."
	if err := s.Notify(ctx, "notifications/initialized", nil); err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	return Info{
		Era:             EraLegacy,
		ProtocolVersion: r.ProtocolVersion,
		ServerInfo:      r.ServerInfo,
		Capabilities:    r.Capabilities,
		Instructions:    r.Instructions,
	}, nil
}
