package fakemcp

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

func init() {
	tools = append(tools, tool{"burst",
		`emits "n" (default 1) notifications/resources/updated for the URIs "prefix"0 .. "prefix"<"uris"-1> in turn (untagged, or tagged for every listen on a modern request), each with params "seq" (from "start", counting up) and "ts" (the wall clock in Unix nanoseconds when written)`,
		toolBurst})
	tools = append(tools, tool{"logburst",
		`emits "n" (default 1) notifications/message (level info, untagged), each with data {"seq": n} counting up from "start"`,
		toolLogBurst})
}

func toolLogBurst(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	n, start := argInt(args, "n", 1), argInt(args, "start", 0)
	for i := range n {
		s.notify("notifications/message", map[string]any{"level": "info", "logger": "fakemcp", "data": map[string]int{"seq": start + i}})
	}
	return fmt.Sprintf("logged %d", n), nil
}

func toolBurst(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	n, uris, start := argInt(args, "n", 1), argInt(args, "uris", 1), argInt(args, "start", 0)
	prefix := argString(args, "prefix")
	if prefix == "" {
		prefix = "fake://r/"
	}
	if uris < 1 {
		uris = 1
	}
	s.fanMu.RLock() // see toolChanged
	defer s.fanMu.RUnlock()
	s.mu.Lock()
	var ids []json.RawMessage
	for id := range s.listens {
		ids = append(ids, json.RawMessage(id))
	}
	s.mu.Unlock()
	tagged := s.flags["modern"] || r.modern
	for i := range n {
		p := map[string]any{"uri": fmt.Sprintf("%s%d", prefix, i%uris), "seq": start + i}
		if !tagged {
			p["ts"] = time.Now().UnixNano()
			s.notify("notifications/resources/updated", p)
			continue
		}
		for _, id := range ids {
			p["_meta"] = map[string]any{jsonrpc.MetaSubscriptionID: id}
			p["ts"] = time.Now().UnixNano()
			s.notify("notifications/resources/updated", p)
		}
	}
	return fmt.Sprintf("burst %d", n), nil
}
