package session

import (
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// OversizeReporter is implemented by a Conn that discards stdout lines
// longer than its limit and reports them (*transport.Process does). New
// registers a handler with it: a request whose response line was discarded
// fails at once with ErrResponseTooLarge instead of waiting for its
// deadline.
type OversizeReporter interface {
	OnOversize(func(transport.OversizeLine))
}

// oversize fails the pending call whose response line the transport
// discarded for its size, when the kept start of the line shows that it is
// a response and to which id. It runs on the reader goroutine. Any other
// oversize line (a notification, a request of the child, a response whose
// "id" comes after its oversize "result") has been counted and logged by
// the transport and is otherwise ignored; a call it answered then ends at
// its deadline.
func (s *Session) oversize(line transport.OversizeLine) {
	id, ok := responseIDPrefix(line.Prefix)
	if !ok {
		return
	}
	c := s.takeCall(id)
	if c == nil {
		s.log.Debug("oversize response to no pending request", zap.ByteString("id", id))
		return
	}
	s.log.Debug("request failed: response larger than maxLineSize",
		zap.Uint64("id", c.id), zap.String("method", c.method), zap.Int("line_size", line.Size))
	c.ch <- outcome{err: fmt.Errorf("%w: the response was %d bytes, the server's maxLineSize is %d bytes; "+
		"raise maxLineSize in the server's config to accept it", ErrResponseTooLarge, line.Size, line.MaxLineSize)}
}

// responseIDPrefix returns the top-level "id" of the JSON-RPC message whose
// start is prefix (the rest was cut off) when that start shows that it is a
// response: at the top level, an "id" and a "result" or "error" member and
// no "method". The members are scanned in order until one is cut off; the
// values are skipped whole, so an "id" inside params or result is never
// taken, and a response whose "id" comes after its cut-off result gives
// false. Keys spelled with escapes or in another case (encoding/json
// would match "ID") give false too, as does anything that is not the start
// of an object.
func responseIDPrefix(prefix []byte) (id []byte, ok bool) {
	i := jsonrpc.SkipSpace(prefix, 0)
	if i >= len(prefix) || prefix[i] != '{' {
		return nil, false
	}
	i = jsonrpc.SkipSpace(prefix, i+1)
	response := false
	for i < len(prefix) && prefix[i] == '"' {
		end, escaped := jsonrpc.StringEnd(prefix, i)
		if end < 0 {
			break // the key is cut off
		}
		key := string(prefix[i+1 : end-1])
		if escaped {
			return nil, false
		}
		switch key {
		case "method":
			return nil, false
		case "result", "error":
			response = true
		case "id":
			id = nil // a later "id" replaces an earlier one
		default:
			for _, name := range [...]string{"id", "result", "error", "method"} {
				if strings.EqualFold(key, name) {
					return nil, false
				}
			}
		}
		i = jsonrpc.SkipSpace(prefix, end)
		if i >= len(prefix) || prefix[i] != ':' {
			break
		}
		vstart := jsonrpc.SkipSpace(prefix, i+1)
		i = jsonrpc.ValueEnd(prefix, vstart)
		if i < 0 {
			break // the value is cut off
		}
		if key == "id" {
			id = prefix[vstart:i]
		}
		i = jsonrpc.SkipSpace(prefix, i)
		if i >= len(prefix) || prefix[i] != ',' {
			break
		}
		i = jsonrpc.SkipSpace(prefix, i+1)
	}
	return id, response && id != nil
}
