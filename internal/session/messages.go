package session

import (
	"bytes"
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// messageHandler returns req.OnMessage when req opted in to log messages
// with a non-empty _meta["io.modelcontextprotocol/logLevel"], else nil.
// ("No notifications/message unless the request set
// io.modelcontextprotocol/logLevel; when set, messages at or above the
// level may precede the final response, only for that request".)
// Only requests carrying the key are decoded, so a call without it costs
// one bytes.Contains.
func messageHandler(req *Request) func(json.RawMessage) {
	if req.OnMessage == nil || !bytes.Contains(req.Params, []byte(jsonrpc.MetaLogLevel)) {
		return nil
	}
	var top struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &top) != nil {
		return nil
	}
	var level string
	if json.Unmarshal(top.Meta[jsonrpc.MetaLogLevel], &level) != nil || level == "" {
		return nil
	}
	return req.OnMessage
}

// routeMessage hands a notifications/message of the child to the caller of
// the request it belongs to, and reports whether it did; the message then
// reaches no watcher.
//
// On stdio a log message names no request (the Go SDK correlates a
// message with its request only on the streamable HTTP transport, by the
// stream it writes to), so a message is attributed only where that is
// certain enough:
//   - modern child: messages are sent only for requests that set a log
//     level, so the message belongs to the one pending call that opted in;
//     with two or more, it cannot be told which;
//   - legacy child: the level is session-wide (logging/setLevel) and a
//     message may come from anything the child does, so it is attributed
//     only when exactly one call is pending and that call opted in.
//
// Everything else is left to OnNotification (watchers); during says calls
// were in flight then, so the message may be of one of them.
func (s *Session) routeMessage(params json.RawMessage) (routed, during bool) {
	info := s.info.Load()
	modern := info != nil && info.Era == EraModern
	var target *call
	s.mu.Lock()
	during = len(s.pending) > 0
	if modern || len(s.pending) == 1 {
		for _, c := range s.pending {
			if c.onMessage == nil {
				continue
			}
			if target != nil {
				target = nil // two candidates: not attributable
				break
			}
			target = c
		}
	}
	s.mu.Unlock()
	if target == nil {
		return false, during
	}
	target.onMessage(params)
	return true, during
}
