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
			p.stderrLog.flush(p.log)
			return
		}
	}
}

// stderrLogPerSecond is how many stderr lines of one child are logged at
// Debug per second; the rest are only counted in the log (the ring keeps
// them all for mcpdctl logs), so that a child flooding its stderr cannot
// make mcpd's own log, and whoever reads it, carry the flood.
const stderrLogPerSecond = 200

// stderrLogLimit is the drain's count of the lines it logged in the current
// second; only the drain goroutine uses it.
type stderrLogLimit struct {
	window  time.Time // start of the current second
	logged  int       // lines logged in it
	skipped int       // lines not logged in it
}

// flush logs how many lines of the current second were not logged.
func (l *stderrLogLimit) flush(log *zap.Logger) {
	if l.skipped > 0 {
		log.Debug("child stderr lines not logged (mcpdctl logs has them)", zap.Int("lines", l.skipped))
		l.skipped = 0
	}
}

// emitStderr appends one line to the ring and logs it at Debug, at most
// stderrLogPerSecond a second. Text is made valid UTF-8 (a truncated line
// may end inside a rune; proto strings must be valid UTF-8).
func (p *Process) emitStderr(b []byte, truncated bool) {
	var text string
	if utf8.Valid(b) {
		text = string(b)
	} else {
		text = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	now := time.Now()
	if p.ring != nil {
		p.ring.Add(Line{Time: now, Text: text, Truncated: truncated, Pid: p.pid})
	}
	if !p.log.Core().Enabled(zap.DebugLevel) {
		return
	}
	l := &p.stderrLog
	if now.Sub(l.window) >= time.Second {
		l.flush(p.log)
		*l = stderrLogLimit{window: now}
	}
	if l.logged >= stderrLogPerSecond {
		l.skipped++
		return
	}
	l.logged++
	p.log.Debug("child stderr", zap.String("line", text), zap.Bool("truncated", truncated))
}
