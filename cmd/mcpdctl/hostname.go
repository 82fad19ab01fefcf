package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/bridge"
)

// The bridge's host is known to mcpd by its own name (its clientInfo) and
// this process's pid: that is its identity for a server shared per client
// ("share": "client"), which runs one instance for it. The bridge lists
// and subscribes as it starts, before the host's first message has been
// read, so mcpdctl reads that message first, waiting hostNameWait at most
// (a host writes it at once), and names the host to mcpd up front: in the
// relay's header, or as the client name of every gRPC call.

// hostNameWait bounds the wait for the host's first message.
const hostNameWait = time.Second

// maxPeek bounds what is read looking for the end of the first message.
const maxPeek = 1 << 20

// peekHostName reads in's first line, waiting wait at most, and returns
// the host name it gives ("" for none, or when it did not come in time)
// and a reader that gives in's bytes from the start.
func peekHostName(in io.Reader, wait time.Duration) (string, io.Reader) {
	p := &peekedReader{in: in, done: make(chan struct{})}
	go p.peek() // owned by p: every Read waits for it
	select {
	case <-p.done:
	case <-time.After(wait):
		return "", p
	}
	line, _, _ := bytes.Cut(p.buf, []byte{'\n'})
	return bridge.HostName(line), p
}

// peekedReader is the host's input read from its start, after a first
// read of its first line.
type peekedReader struct {
	in   io.Reader
	done chan struct{} // closed when peek returned
	// Written by peek before done is closed; read by Read (one reader).
	buf []byte // read by peek, given first
	err error  // the error that ended peek, given after buf
}

// peek reads in until the first newline, an error or maxPeek bytes.
func (p *peekedReader) peek() {
	defer close(p.done)
	chunk := make([]byte, 32<<10)
	for len(p.buf) < maxPeek {
		n, err := p.in.Read(chunk)
		p.buf = append(p.buf, chunk[:n]...)
		if err != nil {
			p.err = err
			return
		}
		if bytes.IndexByte(chunk[:n], '\n') >= 0 {
			return
		}
	}
}

func (p *peekedReader) Read(b []byte) (int, error) {
	<-p.done
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.in.Read(b)
}

// SetReadDeadline sets in's, when it has one (the relay ends its stdin
// loop with it); a read still waiting for the first line ends as well.
func (p *peekedReader) SetReadDeadline(t time.Time) error {
	if d, ok := p.in.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return errors.ErrUnsupported
}

// asHost returns ctx whose gRPC calls name the app host, in place of
// mcpdctl, when host is not "".
func asHost(ctx context.Context, host string) context.Context {
	return apiclient.Outgoing(ctx, apiclient.Metadata{Client: host})
}
