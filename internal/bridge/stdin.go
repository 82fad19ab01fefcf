package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// oversize answers a line longer than --max-line-size: a request gets an
// invalid-request error with its id when the kept start of the line shows
// it, else with id null ("id may be missing only if the request id was
// unreadable"); an answer to one of the bridge's requests fails that
// request instead.
func (b *bridge) oversize(over *jsonrpc.OversizeLine, max int) {
	msg := fmt.Sprintf("message too large: the line is %d bytes, mcpdctl bridge accepts lines of up to %d bytes (--max-line-size)", over.Size, max)
	b.opts.Warnf("bridge: %s", msg)
	id, response := jsonrpc.PrefixMembers(over.Prefix)
	if response && id != nil {
		b.mu.Lock()
		ch := b.hostWaits[idKey(id)]
		delete(b.hostWaits, idKey(id))
		b.mu.Unlock()
		if ch != nil {
			ch <- &jsonrpc.Message{ID: id, Error: jsonrpc.Errorf(jsonrpc.CodeInternalError, "the client's answer was too large: %s", msg)}
		}
		return
	}
	var scope json.RawMessage // the answer to a request, when its id shows
	if id == nil {
		id = json.RawMessage("null")
	} else {
		scope = id
	}
	b.emit(scope, &jsonrpc.Message{ID: id, Error: jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%s", msg)})
}

// serve reads the host's messages until stdin ends ("exit when the host
// closes stdin"), or until ctx ends (a signal to mcpdctl): a stdin with
// read deadlines (a pipe or socket in the poller) is then ended at once.
func (b *bridge) serve(ctx context.Context, in io.Reader) error {
	if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok {
		stop := context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Now()) })
		defer stop()
	}
	r := jsonrpc.NewLineReader(in, b.maxLine)
	for {
		line, over, err := r.Next()
		switch {
		case over != nil:
			b.oversize(over, b.maxLine)
		case len(bytes.TrimSpace(line)) > 0:
			b.awaitListen(ctx, b.dispatch(ctx, line))
		}
		if errors.Is(err, io.EOF) || err != nil && ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
}

// awaitListen holds back the host's next message until the
// subscriptions/listen just dispatched is in place (its acknowledgement is
// written), for at most readyTimeout: SDK clients open a listen
// without waiting for its acknowledgement, so a call the host sends right
// after it must not overtake it (an update that call causes would be lost).
func (b *bridge) awaitListen(ctx context.Context, acked <-chan struct{}) {
	if acked == nil {
		return
	}
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-acked:
	case <-t.C:
	case <-ctx.Done():
	}
}
