package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// logLevels are the syslog levels MCP uses.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel serves a legacy host's logging/setLevel. The level is
// remembered and sent with each of the host's later requests as
// _meta["io.modelcontextprotocol/logLevel"]: a modern child sends log
// messages only for requests that carry it, and mcpd delivers a child's
// messages to the request's caller only when the request opted in this way.
// It is also passed on to legacy children, whose level is session-wide.
func (b *bridge) setLevel(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	var level string
	if err := json.Unmarshal(r.params["level"], &level); err != nil || !slices.Contains(logLevels, level) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.level must be one of %v", logLevels)
	}
	b.mu.Lock()
	b.logLevel = level
	b.mu.Unlock()
	for _, n := range b.serverNames() {
		b.mu.Lock()
		legacy := b.info[n] == nil || b.info[n].Era != "modern"
		b.mu.Unlock()
		if legacy {
			// Modern children have no logging/setLevel; the per-request
			// level reaches them.
			_, _ = b.forward(ctx, r, n, r.method, r.params)
		}
	}
	return json.RawMessage("{}"), nil
}

// stampLogLevel adds the level a legacy host set to the _meta of one of its
// requests (a modern host sets it per request itself).
func (b *bridge) stampLogLevel(r *hostReq) {
	if r.modern || r.method == "logging/setLevel" {
		return
	}
	b.mu.Lock()
	level := b.logLevel
	b.mu.Unlock()
	if level == "" {
		return
	}
	meta := make(map[string]json.RawMessage, len(r.meta)+1)
	for k, v := range r.meta {
		meta[k] = v
	}
	meta[jsonrpc.MetaLogLevel] = json.RawMessage(strconv.Quote(level))
	r.meta = meta
}

// deliverLog forwards a log message a served server sent outside any
// request (mcpd gives those to its watchers) to a legacy host that set a
// level, if the message is at that level or above: such a host expects the
// server's messages after logging/setLevel, not only those of its own
// calls. One sent while calls were in flight at the server, which mcpd
// could not give to any of them, is not: it may be of another host's
// call. A modern host has no channel for them.
func (b *bridge) deliverLog(ev *service.SubscriptionEvent) {
	b.mu.Lock()
	legacy, level := b.initialized, b.logLevel
	b.mu.Unlock()
	params := ev.Params
	if !legacy || level == "" || ev.DuringCalls || !json.Valid(params) {
		return // during calls: it may be of another host's
	}
	var msg struct {
		Level string `json:"level"`
	}
	_ = json.Unmarshal(params, &msg)
	if at := slices.Index(logLevels, msg.Level); at >= 0 && at < slices.Index(logLevels, level) {
		return
	}
	b.write(&jsonrpc.Message{Method: "notifications/message", Params: params})
}
