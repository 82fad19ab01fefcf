package supervisor

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// This file wires tool pinning (internal/pin) into the supervisor, where
// every front's lists and calls pass:
//
//   - ListCached of tools/list gives every merged list, fetched or cached,
//     to the book (pinList): a list seen for the first time is recorded,
//     and under "enforce" the changed and new tools are left out.
//   - CallCached of tools/call under "enforce" checks the tool first
//     (pinGate); when the server's tools were not listed since its process
//     started or since its last list_changed, they are listed first.
//   - A raw tools/list page (SendRequest) is filtered too (pinPage).
//   - observeNotification marks the list stale on tools list_changed.
//
// Lists and calls are pinned per declaration variant (pinVariant): the
// variant is the scope that keys the cache's shaped answers (capsScope).

// Tool methods pinning looks at.
const (
	methodToolsList = "tools/list"
	methodToolsCall = "tools/call"
)

// pinMode is the server's pinning mode; ModeOff without a book.
func (sv *server) pinMode() pin.Mode {
	if sv.sup.opts.Pins == nil {
		return pin.ModeOff
	}
	sv.mu.Lock()
	v := sv.spec.Pin
	sv.mu.Unlock()
	m, err := pin.ParseMode(v)
	if err != nil {
		return pin.DefaultMode // config validation rejects it before this
	}
	return m
}

// currentPid is the pid of the server's process (0: none).
func (sv *server) currentPid() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.st.pid
}

// pinList gives a merged tools list to the book and returns what to serve.
// (The pid is read after the list arrived: a list of a process that was
// replaced meanwhile counts for the new one, a window as short as a
// restart, closed again by the new process's list_changed or list.)
func (s *Supervisor) pinList(sv *server, v pin.Variant, items json.RawMessage) (json.RawMessage, error) {
	mode := sv.pinMode()
	if mode == pin.ModeOff {
		return items, nil
	}
	obs, err := s.opts.Pins.ObserveVariant(sv.spec.Name, v, mode, sv.currentPid(), items)
	if err != nil {
		if mode == pin.ModeEnforce {
			return nil, &serverError{server: sv.spec.Name, err: fmt.Errorf("server %q: tools/list: %w: cannot check tool definitions: %v", sv.spec.Name, ErrUnavailable, err)}
		}
		sv.log.Warn("cannot check tool definitions", zap.Error(err))
		return items, nil
	}
	if obs.FirstPin {
		sv.log.Info("tool definitions pinned", zap.String("dir", s.opts.Pins.Store().Dir()))
	}
	if obs.New && len(obs.Changes) > 0 {
		msg := "tool definitions changed since approved; served (pin \"warn\")"
		if mode == pin.ModeEnforce {
			msg = "tool definitions changed since approved; withheld (pin \"enforce\")"
		}
		sv.log.Warn(msg, zap.Strings("tools", changeSummary(obs.Changes)),
			zap.String("review", "mcpdctl tools diff "+sv.spec.Name))
	}
	return obs.Items, nil
}

// pinVariant is the pin variant of a list or call whose declaration caps
// keys the cache with scope (capsScope): "" for a server that answers
// every client alike.
func pinVariant(scope string, caps json.RawMessage) pin.Variant {
	if scope == "" {
		return pin.Variant{}
	}
	return pin.Variant{Key: scope, Capabilities: caps}
}

// changeSummary is "tool (kind)" per change, for the log.
func changeSummary(cs []pin.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Tool + " (" + string(c.Kind) + ")"
	}
	return out
}

// callPinned is CallCached for tools/call and tools/list on a server that
// pins its tools.
func (s *Supervisor) callPinned(ctx context.Context, sv *server, req *session.Request, opts CallOptions, mode pin.Mode) (*session.Response, cache.Source, error) {
	if req.Method == methodToolsCall {
		if err := s.pinGate(ctx, sv, req, opts, mode); err != nil {
			return nil, cache.SourceFetched, err
		}
		return s.callCachedOn(ctx, sv, req, opts)
	}
	resp, src, err := s.callCachedOn(ctx, sv, req, opts)
	if err != nil || resp == nil || resp.Error != nil || mode != pin.ModeEnforce {
		return resp, src, err
	}
	v := pinVariant(sv.capsScope(ctx, req.ClientCapabilities), req.ClientCapabilities)
	page, err := s.opts.Pins.FilterPageVariant(sv.spec.Name, v, mode, resp.Result)
	if err != nil {
		return nil, src, &serverError{server: sv.spec.Name, err: fmt.Errorf("server %q: tools/list: %w: cannot check tool definitions: %v", sv.spec.Name, ErrUnavailable, err)}
	}
	return &session.Response{Result: page}, src, nil
}

// pinGate refuses a call of a withheld tool under ModeEnforce, listing the
// server's tools first when its current list was not seen.
func (s *Supervisor) pinGate(ctx context.Context, sv *server, req *session.Request, opts CallOptions, mode pin.Mode) error {
	if mode != pin.ModeEnforce {
		return nil
	}
	var p struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return fmt.Errorf("call %q: %w: params of tools/call: %v", sv.spec.Name, ErrInvalid, err)
	}
	name := sv.spec.Name
	v := pinVariant(sv.capsScope(ctx, req.ClientCapabilities), req.ClientCapabilities)
	for listed := false; ; listed = true {
		need, err := s.opts.Pins.CheckVariant(name, v, mode, sv.currentPid(), p.Name)
		if err != nil || !need {
			return err
		}
		if listed {
			return serverUnavailable(name, ": its tool definitions could not be checked (it restarted meanwhile); retry")
		}
		base := &session.Request{ClientInfo: req.ClientInfo, ClientCapabilities: req.ClientCapabilities}
		if _, _, err := s.cachedList(ctx, name, methodToolsList, base, opts); err != nil {
			return fmt.Errorf("server %q: tools/call %q: cannot check tool definitions: %w", name, p.Name, err)
		}
	}
}

// pinNotification marks the server's list stale on tools list_changed.
func (sv *server) pinNotification(n session.Notification) {
	if n.Method == "notifications/tools/list_changed" && sv.sup.opts.Pins != nil {
		sv.sup.opts.Pins.Invalidate(sv.spec.Name)
	}
}

// pinPending counts the server's pending tool changes, for Status.
func (sv *server) pinPending() int {
	if sv.sup.opts.Pins == nil {
		return 0
	}
	return sv.sup.opts.Pins.PendingCount(sv.spec.Name)
}

// ToolChanges is the pinning state of one server.
type ToolChanges struct {
	Mode pin.Mode
	// Listed: a tools list was seen since mcpd started.
	Listed  bool
	Changes []pin.Change
}

// ToolChanges lists server's tools (through the cache) and returns how
// they differ from the pinned definitions.
func (s *Supervisor) ToolChanges(ctx context.Context, server string, base *session.Request, opts CallOptions) (ToolChanges, error) {
	sv, err := s.lookup(server)
	if err != nil {
		return ToolChanges{}, err
	}
	out := ToolChanges{Mode: sv.pinMode()}
	if out.Mode == pin.ModeOff {
		return out, nil
	}
	if _, _, err := s.cachedList(ctx, server, methodToolsList, base, opts); err != nil {
		return out, err
	}
	out.Changes, out.Listed = s.opts.Pins.Pending(server)
	return out, nil
}

// ApproveTools accepts the current definitions of the named tools of
// server (all pending changes when none is named) and returns the tools
// approved.
func (s *Supervisor) ApproveTools(ctx context.Context, server string, tools []string, base *session.Request, opts CallOptions) ([]string, error) {
	sv, err := s.lookup(server)
	if err != nil {
		return nil, err
	}
	if sv.pinMode() == pin.ModeOff {
		return nil, fmt.Errorf("approve tools of %q: %w: the server does not pin its tools (pin \"off\")", server, ErrInvalid)
	}
	if _, _, err := s.cachedList(ctx, server, methodToolsList, base, opts); err != nil {
		return nil, err
	}
	approved, err := s.opts.Pins.Approve(server, tools)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(approved) > 0 {
		sv.log.Info("tool definitions approved", zap.Strings("tools", approved))
	}
	return approved, nil
}

// PinsDir is where the pinned definitions are kept ("" without pinning).
func (s *Supervisor) PinsDir() string {
	if s.opts.Pins == nil {
		return ""
	}
	return s.opts.Pins.Store().Dir()
}
