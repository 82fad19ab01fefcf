package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

const (
	// warnSkippedLines is how many skipped or oversize stdout lines of one
	// process are logged at Warn; later ones are logged at Debug, so a
	// child that floods stdout with garbage cannot flood mcpd's log. The
	// counters in Stats keep counting.
	warnSkippedLines = 20
	// skippedPrefixLen is how much of a skipped line is logged.
	skippedPrefixLen = 80
	// maxKeptWriteBuf is the largest write buffer kept for reuse.
	maxKeptWriteBuf = 64 << 10
	// OversizePrefixLen is how much of the start of an oversize line is
	// kept for the OnOversize handler: room for a JSON-RPC envelope's
	// "jsonrpc" and "id" members, which SDKs write first.
	OversizePrefixLen = jsonrpc.OversizePrefix
)

// newline ends every message written to a child.
var newline = []byte{'\n'}

// OversizeLine is a stdout line that was discarded because it was longer
// than MaxLineSize.
type OversizeLine struct {
	// Prefix is the start of the line as the child wrote it, at most
	// OversizePrefixLen bytes. The handler may keep it.
	Prefix []byte
	// Size is the length of the line in bytes without its line ending. A
	// read error in the middle of the line makes it the length read so far.
	Size int
	// MaxLineSize is the limit the line exceeded.
	MaxLineSize int
}

// OnOversize sets fn to receive every stdout line discarded as oversize,
// after it was counted and logged and before ReadMessage goes on to the
// next line. fn runs inside ReadMessage, on its goroutine, and must not
// block. Call OnOversize before the first ReadMessage, or from the
// goroutine that calls it.
func (p *Process) OnOversize(fn func(OversizeLine)) { p.onOversize = fn }

// ReadMessage returns the next JSON object line from the child's stdout,
// without its line ending. Lines that are not JSON objects and oversize
// lines are skipped and counted. It returns io.EOF when stdout is closed.
// The returned slice is owned by the caller.
//
// MCP stdio framing: "Exactly one JSON-RPC message (request, notification or
// response) per line, lines separated by `\n`". A trailing "\r" is stripped
// (as the TypeScript SDK does), surrounding JSON whitespace is trimmed, and
// blank lines are ignored. A line is oversize when it is longer than
// MaxLineSize without its line ending; it is discarded without being
// buffered whole.
func (p *Process) ReadMessage() ([]byte, error) {
	if p.readErr != nil {
		return nil, p.readErr
	}
	for {
		line, err := p.rd.ReadSlice('\n')
		switch {
		case err == nil:
			// Fast path: the whole line is in the bufio buffer; one copy.
			if msg, ok := p.accept(line); ok {
				return bytes.Clone(msg), nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			msg, ok := p.readLong(line)
			if ok {
				return msg, nil
			}
			if p.readErr != nil {
				return nil, p.readErr
			}
		default:
			// "The server may itself initiate shutdown by closing stdout
			// and exiting": a last line without "\n" still counts.
			p.endStdout(err)
			if msg, ok := p.accept(line); ok {
				return bytes.Clone(msg), nil
			}
			return nil, p.readErr
		}
	}
}

// readLong assembles a line longer than the bufio buffer, whose first part
// is first, into its own slice, or discards it once it exceeds maxLine. It
// reports whether a message was accepted; on a read error it records it.
func (p *Process) readLong(first []byte) ([]byte, bool) {
	// A line may carry "\r\n" beyond its maxLine bytes of content.
	limit := p.maxLine + 2
	var acc []byte
	chunk, err := first, error(bufio.ErrBufferFull)
	for {
		if len(acc)+len(chunk) > limit {
			// Oversize: keep the start of the line, drop the rest of
			// what we have and throw the rest of the line away chunk by
			// chunk until its newline, never holding more than one bufio
			// buffer of it.
			start, before := chunk, byte(0) // before: the byte before chunk
			if len(acc) > 0 {
				start, before = acc, acc[len(acc)-1]
			}
			var prefix []byte
			if p.onOversize != nil {
				prefix = head(start)
			}
			total := len(acc) + len(chunk)
			acc = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				before = chunk[len(chunk)-1]
				chunk, err = p.rd.ReadSlice('\n')
				total += len(chunk)
			}
			if err == nil {
				total -= lineEndLen(before, chunk)
			}
			p.discardOversize(prefix, total)
			if err != nil {
				p.endStdout(err)
			}
			return nil, false
		}
		if acc == nil {
			acc = make([]byte, 0, min(2*len(chunk), limit))
		}
		acc = append(acc, chunk...)
		switch {
		case err == nil:
			return p.accept(acc)
		case errors.Is(err, bufio.ErrBufferFull):
			chunk, err = p.rd.ReadSlice('\n')
		default:
			p.endStdout(err)
			return p.accept(acc)
		}
	}
}

// accept strips the line ending and surrounding whitespace from line and
// reports whether the rest is a JSON object; it counts what it rejects. The
// result aliases line.
func (p *Process) accept(line []byte) ([]byte, bool) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > p.maxLine {
		var prefix []byte
		if p.onOversize != nil {
			prefix = head(line)
		}
		p.discardOversize(prefix, len(line))
		return nil, false
	}
	msg := trimJSONSpace(line)
	if len(msg) == 0 {
		return nil, false
	}
	// "Nothing but valid MCP messages may be written to the child's stdin,
	// and the child must not write anything else to stdout. Reality check:
	// misbehaving servers do print banners to stdout; be prepared to
	// log-and-skip unparsable lines rather than crash."
	if msg[0] != '{' || !jsonrpc.Valid(msg) {
		n := p.skipped.Add(1)
		prefix := msg[:min(len(msg), skippedPrefixLen)]
		p.logAnomaly(n+p.oversize.Load(), "skipped non-json stdout line",
			zap.String("line_prefix", strings.ToValidUTF8(string(prefix), "\uFFFD")),
			zap.Int("line_size", len(msg)),
			zap.Int64("lines_skipped", n))
		return nil, false
	}
	return msg, true
}

// discardOversize counts and logs an oversize line of size bytes, then
// hands its prefix to the OnOversize handler, if any.
func (p *Process) discardOversize(prefix []byte, size int) {
	n := p.oversize.Add(1)
	p.logAnomaly(n+p.skipped.Load(), "discarded oversize stdout line",
		zap.Int("line_size_at_least", size),
		zap.Int("max_line_size", p.maxLine),
		zap.Int64("lines_oversize", n))
	if p.onOversize != nil {
		p.onOversize(OversizeLine{Prefix: prefix, Size: size, MaxLineSize: p.maxLine})
	}
}

// head returns a copy of the first OversizePrefixLen bytes of line.
func head(line []byte) []byte {
	return bytes.Clone(line[:min(len(line), OversizePrefixLen)])
}

// lineEndLen is the length of the line ending ("\n" or "\r\n") that last,
// the final chunk of a line, ends with; before is the byte preceding last
// in the line.
func lineEndLen(before byte, last []byte) int {
	switch {
	case len(last) >= 2 && last[len(last)-2] == '\r', len(last) == 1 && before == '\r':
		return 2
	default:
		return 1
	}
}

func (p *Process) logAnomaly(count int64, msg string, fields ...zap.Field) {
	if count <= warnSkippedLines {
		p.log.Warn(msg, fields...)
		return
	}
	p.log.Debug(msg, fields...)
}

// endStdout records the end of stdout and closes it.
func (p *Process) endStdout(err error) {
	switch {
	case errors.Is(err, io.EOF):
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Set by the waiter ShutdownGrace after the exit.
		p.log.Warn("stdout still open after child exit, closing it")
		err = io.EOF
	default:
		err = fmt.Errorf("read stdout of %q: %w", p.name, err)
	}
	p.readErr = err
	_ = p.stdoutR.Close()
}

// trimJSONSpace trims the four JSON whitespace characters from both ends.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
