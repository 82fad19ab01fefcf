package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// defaultBridgeMaxLine is the default --max-line-size: the daemon's
// default maxLineSize (32 MiB).
const defaultBridgeMaxLine = 32 << 20

// oversizePrefix is how much of an oversize line is kept to find its id:
// room for the "jsonrpc" and "id" members, which SDKs write first.
const oversizePrefix = 4 << 10

// lineReader reads the host's newline-delimited messages, each at most max
// bytes without its line ending. A longer line is not buffered whole: its
// start is kept and the rest discarded.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(in io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(in, 64<<10), max: max}
}

// oversizeLine is a discarded line: its first bytes and its size (at least
// that, if stdin ended within it).
type oversizeLine struct {
	prefix []byte
	size   int
}

// next returns the next line without its ending, or, for a line longer
// than max, a nil line and the oversizeLine. err is io.EOF after the last
// line.
func (lr *lineReader) next() (line []byte, over *oversizeLine, err error) {
	var acc []byte
	size := 0
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += len(chunk)
		switch {
		case over != nil:
		case size-lineEnding(acc, chunk) > lr.max:
			over = &oversizeLine{prefix: head(acc, chunk)}
			acc = nil
		default:
			acc = append(acc, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over != nil {
			over.size = size - lineEnding(nil, chunk)
			return nil, over, err
		}
		return acc, nil, err
	}
}

// head is a copy of the first oversizePrefix bytes of acc followed by
// chunk.
func head(acc, chunk []byte) []byte {
	out := make([]byte, 0, oversizePrefix)
	out = append(out, acc[:min(len(acc), oversizePrefix)]...)
	return append(out, chunk[:min(len(chunk), oversizePrefix-len(out))]...)
}

// lineEnding is the length of the "\n" or "\r\n" that ends a line whose
// bytes so far are acc followed by last; 0 if it has none yet.
func lineEnding(acc, last []byte) int {
	if len(last) == 0 || last[len(last)-1] != '\n' {
		return 0
	}
	if len(last) >= 2 && last[len(last)-2] == '\r' || len(last) == 1 && len(acc) > 0 && acc[len(acc)-1] == '\r' {
		return 2
	}
	return 1
}

// oversize answers a line longer than --max-line-size: a request gets an
// invalid-request error with its id when the kept start of the line shows
// it, else with id null ("id may be missing only if the request id was
// unreadable"); an answer to one of the bridge's requests fails that
// request instead.
func (b *bridge) oversize(over *oversizeLine, max int) {
	msg := fmt.Sprintf("message too large: the line is %d bytes, mcpdctl bridge accepts lines of up to %d bytes (--max-line-size)", over.size, max)
	b.c.warnf("bridge: %s", msg)
	id, response := prefixMembers(over.prefix)
	if response && id != nil {
		b.mu.Lock()
		ch := b.hostWaits[idKey(id)]
		delete(b.hostWaits, idKey(id))
		b.mu.Unlock()
		if ch != nil {
			ch <- &rpcMsg{ID: id, Error: errorf(codeInternal, "the client's answer was too large: %s", msg)}
		}
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b.write(&rpcMsg{ID: id, Error: errorf(codeInvalidRequest, "%s", msg)})
}

// prefixMembers scans the top-level members of the JSON object whose start
// is prefix, in order, until one is cut off; it returns the "id" if it was
// read whole and is a string or a number, and reports whether a "result"
// or "error" member (a response) was seen. Values are skipped whole, so an
// "id" inside params is never taken.
func prefixMembers(prefix []byte) (id json.RawMessage, response bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		if key == "result" || key == "error" {
			response = true
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if key == "id" && len(v) > 0 && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
			id = v
		}
	}
	return id, response
}

// serve reads the host's messages until stdin ends ("exit when the host
// closes stdin").
func (b *bridge) serve(ctx context.Context, in io.Reader) error {
	r := newLineReader(in, b.maxLine)
	for {
		line, over, err := r.next()
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

func (b *bridge) write(m *rpcMsg) {
	m.JSONRPC = "2.0"
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
	b.write(&rpcMsg{Method: method, Params: p})
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
