package main

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

// defaultBridgeMaxLine is the default --max-line-size: the daemon's
// default maxLineSize (32 MiB).
const defaultBridgeMaxLine = 32 << 20

// oversize answers a line longer than --max-line-size: a request gets an
// invalid-request error with its id when the kept start of the line shows
// it, else with id null ("id may be missing only if the request id was
// unreadable"); an answer to one of the bridge's requests fails that
// request instead.
func (b *bridge) oversize(over *jsonrpc.OversizeLine, max int) {
	msg := fmt.Sprintf("message too large: the line is %d bytes, mcpdctl bridge accepts lines of up to %d bytes (--max-line-size)", over.Size, max)
	b.c.warnf("bridge: %s", msg)
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
	if id == nil {
		id = json.RawMessage("null")
	}
	b.write(&jsonrpc.Message{ID: id, Error: jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%s", msg)})
}

// serve reads the host's messages until stdin ends ("exit when the host
// closes stdin").
func (b *bridge) serve(ctx context.Context, in io.Reader) error {
	r := jsonrpc.NewLineReader(in, b.maxLine)
	for {
		line, over, err := r.Next()
		switch {
		case over != nil:
			b.oversize(over, b.maxLine)
		case len(bytes.TrimSpace(line)) > 0:
			b.awaitListen(ctx, b.dispatch(ctx, line))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
}

func (b *bridge) write(m *jsonrpc.Message) {
	m.JSONRPC = jsonrpc.Version
	data, err := json.Marshal(m)
	if err != nil {
		b.c.warnf("bridge: encode message: %v", err)
		return
	}
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if _, err := b.out.Write(append(data, '\n')); err != nil {
		b.c.warnf("bridge: write stdout: %v", err)
	}
}

func (b *bridge) notify(method string, params any) {
	p, err := json.Marshal(params)
	if err != nil {
		return
	}
	b.write(&jsonrpc.Message{Method: method, Params: p})
}

// awaitListen holds back the host's next message until the
// subscriptions/listen just dispatched is in place (its acknowledgement is
// written), for at most bridgeReadyTimeout: SDK clients open a listen
// without waiting for its acknowledgement, so a call the host sends right
// after it must not overtake it (an update that call causes would be lost).
func (b *bridge) awaitListen(ctx context.Context, acked <-chan struct{}) {
	if acked == nil {
		return
	}
	t := time.NewTimer(bridgeReadyTimeout)
	defer t.Stop()
	select {
	case <-acked:
	case <-t.C:
	case <-ctx.Done():
	}
}
