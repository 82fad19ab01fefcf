package bridge

import (
	"context"
	"sync"
)

// answerBufs are the buffers HTTP answers are written from: one Write of
// the whole message, so that net/http sends a small answer in one write
// (and a large one too on a connection that holds writes, WriteHolder);
// reused, so that a large list is not allocated again for every answer.
var answerBufs bufPool

// maxPooledAnswer bounds the buffers kept: a rare huge answer's is left to
// the collector.
const maxPooledAnswer = 256 << 10

// bufPool is a pool of byte buffers.
type bufPool struct{ p sync.Pool }

// get is an empty buffer.
func (b *bufPool) get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return (*v)[:0]
	}
	return make([]byte, 0, 4<<10)
}

// put gives buf back once nothing refers to it.
func (b *bufPool) put(buf []byte) {
	if cap(buf) == 0 || cap(buf) > maxPooledAnswer {
		return
	}
	b.p.Put(&buf)
}

// WriteHolder is the connection of an HTTP request when it can hold what
// is written to it and send it in one system call (rawio.Conn): a plain
// JSON answer then leaves in one write(2), not in net/http's pieces.
type WriteHolder interface {
	Hold()
	Release() error
}

type writeHolderKey struct{}

// WithWriteHolder returns ctx, a connection's (http.Server.ConnContext),
// carrying its connection h.
func WithWriteHolder(ctx context.Context, h WriteHolder) context.Context {
	return context.WithValue(ctx, writeHolderKey{}, h)
}

// writeHolderOf is the connection of the request of ctx, nil when it
// cannot hold writes.
func writeHolderOf(ctx context.Context) WriteHolder {
	h, _ := ctx.Value(writeHolderKey{}).(WriteHolder)
	return h
}
