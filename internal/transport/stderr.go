package transport

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// drainStderr is the stderr goroutine. It reads stderr in StderrReadSize
// chunks until EOF and turns them into lines of at most MaxStderrLine bytes,
// so a child writing endlessly without a newline costs bounded memory and is
// never blocked on a full pipe ("A daemon should drain stderr continuously
// (to avoid the child blocking on a full pipe)").
func (p *Process) drainStderr() {
	defer close(p.stderrDone)
	buf := make([]byte, StderrReadSize)
	var line []byte     // the current line, at most MaxStderrLine bytes
	discarding := false // the current line was truncated; skip to its newline
	for {
		n, err := p.stderrR.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			part := chunk
			i := bytes.IndexByte(chunk, '\n')
			if i >= 0 {
				part, chunk = chunk[:i], chunk[i+1:]
			} else {
				chunk = nil
			}
			if !discarding {
				if room := MaxStderrLine - len(line); len(part) > room {
					// Emit the kept part now (a follower sees it at once)
					// and drop the rest of the line.
					p.emitStderr(append(line, part[:room]...), true)
					line = line[:0]
					discarding = true
				} else {
					line = append(line, part...)
				}
			}
			if i >= 0 {
				if !discarding {
					p.emitStderr(bytes.TrimSuffix(line, []byte{'\r'}), false)
				}
				line = line[:0]
				discarding = false
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				p.log.Warn("stderr still open after child exit, closing it")
			}
			// EOF, or the read deadline the waiter set ShutdownGrace after
			// the exit: flush an unterminated line.
			if len(line) > 0 && !discarding {
				p.emitStderr(bytes.TrimSuffix(line, []byte{'\r'}), false)
			}
			return
		}
	}
}

// emitStderr appends one line to the ring and logs it at Debug. Text is made
// valid UTF-8 (a truncated line may end inside a rune; proto strings must be
// valid UTF-8).
func (p *Process) emitStderr(b []byte, truncated bool) {
	var text string
	if utf8.Valid(b) {
		text = string(b)
	} else {
		text = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	if p.ring != nil {
		p.ring.Add(Line{Time: time.Now(), Text: text, Truncated: truncated, Pid: p.pid})
	}
	if ce := p.log.Check(zap.DebugLevel, "child stderr"); ce != nil {
		ce.Write(zap.String("line", text), zap.Bool("truncated", truncated))
	}
}
