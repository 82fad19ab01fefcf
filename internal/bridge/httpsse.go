package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Stream timing: keep-alive comments on open SSE streams (proxies and
// clients drop idle connections), and the longest a write to one host may
// take before its stream is given up (a stuck host must not hold up the
// bridge's other hosts).
var (
	keepAliveInterval = 15 * time.Second
	streamWriteTime   = 10 * time.Second
)

// httpStream is one HTTP response carrying the bridge's messages: the
// output of one POSTed request (its answer as application/json, or, when
// other output comes first, an SSE stream that the answer ends), or a
// legacy session's GET stream.
type httpStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// inflight cancels the request of a POST's stream (end), the host
	// being gone; cancel ends a legacy session's GET stream.
	inflight *inflightReq
	cancel   context.CancelFunc
	conn     WriteHolder // the request's connection, when it holds writes; nil if not
	modern   bool        // errors of a plain JSON answer get their HTTP status
	// inner and outer rewrite a modern request's id: the bridge knows it
	// as inner, the host as outer; listen also rewrites the subscription
	// id its notifications carry.
	inner, outer json.RawMessage
	listen       bool
	get          bool // a GET stream: no answer ends it

	mu       sync.Mutex // guards the fields below and writes to w
	sse      bool
	ended    bool // nothing more may be written
	answered bool
	failed   bool // a write failed: the request was cancelled
	keep     *time.Timer
	buf      []byte
}

// jsonContentType is the Content-Type header of a JSON answer; shared,
// never modified.
var jsonContentType = []string{"application/json"}

func newHTTPStream(w http.ResponseWriter, r *http.Request, cancel context.CancelFunc) *httpStream {
	return &httpStream{w: w, rc: http.NewResponseController(w), cancel: cancel, conn: writeHolderOf(r.Context())}
}

// send writes m on the stream, dropping it once the stream has ended.
func (s *httpStream) send(m *jsonrpc.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	final := false
	if s.inner != nil {
		if m.Method == "" && bytes.Equal(m.ID, s.inner) {
			cp := *m
			cp.ID, final = s.outer, true
			m = &cp
		}
		if s.listen {
			m = rewriteID(m, s.inner, s.outer)
		}
	} else {
		final = m.Method == "" && len(m.ID) > 0 && !s.get
	}
	if s.buf == nil {
		s.buf = answerBufs.get()
	}
	var err error
	s.buf, err = appendMessage(s.buf[:0], m)
	if err != nil {
		return err
	}
	if final && !s.sse {
		s.writeJSON(s.status(m))
		return nil
	}
	if !s.sse {
		s.startSSE()
	}
	err = s.writeEvent(s.buf)
	if final {
		s.answered = true
		s.endLocked()
	}
	return err
}

// status is the HTTP status of a plain JSON answer: a modern error gets
// the status the 2026-07-28 Streamable HTTP transport gives its code.
// (A missing _meta field's -32602 is answered 400 before the request is
// served; the -32602 of a served request, an unknown tool or a bad
// cursor, is the method's answer, 200.)
func (s *httpStream) status(m *jsonrpc.Message) int {
	if !s.modern || m.Error == nil {
		return http.StatusOK
	}
	return errorStatus(m.Error.Code)
}

func errorStatus(code int64) int {
	switch code {
	case codeHeaderMismatch, codeMissingClientCapabilities, jsonrpc.CodeUnsupportedProtocolVersion,
		jsonrpc.CodeInvalidRequest, jsonrpc.CodeParseError:
		return http.StatusBadRequest
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}

func (s *httpStream) writeJSON(status int) {
	h := s.w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(s.buf))}
	s.w.WriteHeader(status)
	if s.conn != nil && len(s.buf) > holdAbove {
		// net/http would write the header and the first piece, then
		// the rest: written out whole, with the header, in one write(2).
		s.conn.Hold()
		_, err := s.w.Write(s.buf)
		if err == nil {
			err = s.rc.Flush()
		}
		if rerr := s.conn.Release(); err == nil {
			err = rerr
		}
		if err != nil {
			s.failedLocked()
		}
	} else if _, err := s.w.Write(s.buf); err != nil {
		s.failedLocked()
	}
	s.answered = true
	s.endLocked()
}

// holdAbove is the size of a JSON answer above which net/http writes it
// in more than one piece: its connection's buffer is 4 KB, the header
// included.
const holdAbove = 3 << 10

// startSSE turns the response into an SSE stream.
func (s *httpStream) startSSE() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.sse = true
	s.keep = time.AfterFunc(keepAliveInterval, s.keepAlive)
}

// open starts the stream as SSE at once (a GET stream, a listen), with a
// comment so that the host sees the headers now.
func (s *httpStream) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sse || s.ended {
		return nil
	}
	s.startSSE()
	return s.write([]byte(": ok\n\n"))
}

func (s *httpStream) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.write([]byte(": keep-alive\n\n")) == nil {
		s.keep.Reset(keepAliveInterval)
	}
}

// writeEvent writes one message event; a message with line breaks (raw
// JSON passed on as it came) takes one data line per line.
func (s *httpStream) writeEvent(data []byte) error {
	ev := make([]byte, 0, len(data)+32)
	ev = append(ev, "event: message\n"...)
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		ev = append(append(append(ev, "data: "...), data[:i]...), '\n')
		data = data[i+1:]
	}
	ev = append(append(append(ev, "data: "...), data...), "\n\n"...)
	return s.write(ev)
}

// write writes p and flushes, within streamWriteTime; on failure the
// stream ends and its request is cancelled.
func (s *httpStream) write(p []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTime))
	_, err := s.w.Write(p)
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.endLocked()
		s.failedLocked()
		return fmt.Errorf("write to the client: %w", err)
	}
	return nil
}

// failedLocked cancels the request of a stream a write to failed; s.mu is
// held.
func (s *httpStream) failedLocked() {
	s.failed = true
	switch {
	case s.inflight != nil:
		s.inflight.end()
	case s.cancel != nil:
		s.cancel()
	}
}

// writeFailed reports whether a write to the stream failed.
func (s *httpStream) writeFailed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// end ends the stream: nothing is written to it afterwards. It returns
// whether anything was written.
func (s *httpStream) end() (written bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	written = s.sse || s.answered
	s.endLocked()
	return written
}

func (s *httpStream) endLocked() {
	s.ended = true
	if s.keep != nil {
		s.keep.Stop()
	}
	if s.buf != nil {
		answerBufs.put(s.buf) // written: net/http copied it or wrote it out
		s.buf = nil
	}
}

// appendMessage appends m as one line of JSON-RPC 2.0
// (jsonrpc.AppendMessage), a response without a result or an error with
// an empty result.
func appendMessage(buf []byte, m *jsonrpc.Message) ([]byte, error) {
	out := *m
	out.JSONRPC = jsonrpc.Version
	switch {
	case out.Error != nil:
		out.Result = nil // an error answer has no result
	case out.Method == "" && len(out.Result) == 0:
		out.Result = emptyResult
	}
	return jsonrpc.AppendMessage(buf, &out)
}

var emptyResult = json.RawMessage("{}")

// rewriteID replaces the bridge's id for a modern listen with the host's
// in the subscription id m's params or result carry.
func rewriteID(m *jsonrpc.Message, inner, outer json.RawMessage) *jsonrpc.Message {
	cp := *m
	if bytes.Contains(cp.Params, inner) {
		cp.Params = bytes.ReplaceAll(cp.Params, inner, outer)
	}
	if bytes.Contains(cp.Result, inner) {
		cp.Result = bytes.ReplaceAll(cp.Result, inner, outer)
	}
	return &cp
}
