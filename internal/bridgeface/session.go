package bridgeface

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// defaultAppName is how a session is listed until its host's calls name
// it (the gRPC bridge's name for itself, which the audit log knows).
const defaultAppName = "mcpdctl-bridge"

// session is one connection's bridge.
type session struct {
	conn net.Conn
	in   *bufio.Reader // the connection, past the header
	out  *connWriter
	h    bridge.RelayHeader
	app  *core.App // nil until the header was read
}

// openSession reads and checks the header of c and registers the app. On
// error the session can only answer it.
func openSession(c net.Conn, srv *core.Service, uid, pid int) (*session, error) {
	s := &session{conn: c, in: bufio.NewReaderSize(c, 64<<10), out: newConnWriter(c)}
	if err := c.SetReadDeadline(time.Now().Add(headerTimeout)); err != nil {
		return s, fmt.Errorf("set deadline: %w", err)
	}
	h, err := readHeader(s.in)
	if err != nil {
		return s, err
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return s, fmt.Errorf("clear deadline: %w", err)
	}
	s.h = h
	s.app = srv.NewLocalApp(core.TransportRelay, defaultAppName, uid, pid)
	if h.Host != "" {
		// The host's name and mcpdctl's pid: the identity the same host
		// has through the gRPC bridge (core instances.go).
		s.app.Identify(h.Host, false)
	}
	return s, nil
}

// errBadHeader is the class of a header refused: one this mcpd cannot
// read (RelayAnswer.BadHeader).
var errBadHeader = errors.New("bad header")

// readHeader reads the header line and checks it.
func readHeader(r *bufio.Reader) (bridge.RelayHeader, error) {
	var h bridge.RelayHeader
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return h, fmt.Errorf("%w: longer than %d bytes", errBadHeader, r.Size())
	case err != nil:
		return h, fmt.Errorf("%w: %w", errBadHeader, err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("%w: want one JSON object line of bridge options: %w", errBadHeader, err)
	}
	if h.All == (len(h.Names) > 0) {
		return h, fmt.Errorf("%w: name at least one server, or all", errBadHeader)
	}
	if _, ok := profile.ParsePrefix(h.Prefix); !ok {
		return h, fmt.Errorf("%w: prefix must be \"always\" or \"on-collision\", not %q", errBadHeader, h.Prefix)
	}
	if h.MaxLine < 0 || h.TimeoutMs < 0 {
		return h, fmt.Errorf("%w: maxLine and timeoutMs must not be negative", errBadHeader)
	}
	return h, nil
}

// answer writes the header's answer: ok for nil, else err's text.
func (s *session) answer(err error) {
	a := bridge.RelayAnswer{OK: err == nil, BadHeader: errors.Is(err, errBadHeader)}
	if err != nil {
		a.Error = err.Error()
	}
	s.out.open(a)
}

// run serves the host's session until the connection's input ends, with
// the options of the header, as the host's app.
func (s *session) run(life context.Context, be bridge.Backend) error {
	h := s.h
	var watch sync.WaitGroup // watchHangup
	defer watch.Wait()
	served, gone := context.WithCancel(life)
	defer gone()
	in := &eofReader{r: s.in, onEOF: func() { watch.Go(func() { watchHangup(served, s.conn, gone) }) }}
	ctx := bridge.WithCaller(served, s.app)
	if h.Root != "" {
		ctx = core.WithRoot(ctx, h.Root)
	}
	timeout := time.Duration(h.TimeoutMs) * time.Millisecond
	opts := bridge.Options{
		Names:   h.Names,
		All:     h.All,
		Timeout: timeout,
		MaxLine: h.MaxLine,
		Warnf:   s.out.warnf,
		RPCError: func(ctx context.Context, err error, _ string) error {
			return startError(ctx, err, timeout)
		},
		CallOptions: func() service.Options {
			return service.Options{Timeout: timeout, Client: service.Client{Name: h.Client, Version: h.Version}}
		},
		Profile: h.Profile,
		Prefix:  profile.Prefix(h.Prefix),
		// mcpd stopping: mcpdctl's relay re-sends the host's listens to
		// the bridge it runs itself.
		HandedOver: func() bool { return life.Err() != nil },
		LocalClock: true, // this bridge runs in mcpd
	}
	return bridge.ServeStarted(ctx, be, opts, in, s.out, s.answer)
}

// startError is the message of a call that failed while the bridge
// started, as mcpdctl words it for the gRPC bridge: err, the service's
// error, says its message only.
func startError(ctx context.Context, err error, timeout time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("timed out after %s (see --timeout)", timeout)
	}
	return err
}

// connWriter is the session's output: the header's answer first, then the
// bridge's lines (one Write each) and its warnings, never interleaved.
// What is written before the answer is held until it is out; after a
// failed start it is dropped, as is everything after.
type connWriter struct {
	w io.Writer

	mu       sync.Mutex // serializes writes to w; guards the fields below
	answered bool
	discard  bool   // the start failed: nothing follows the answer
	held     []byte // written before the answer
}

func newConnWriter(w io.Writer) *connWriter { return &connWriter{w: w} }

// open writes the answer, then what was held.
func (w *connWriter) open(a bridge.RelayAnswer) {
	data, _ := json.Marshal(a) // plain strings and a bool: cannot fail
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answered {
		return
	}
	w.answered, w.discard = true, !a.OK
	data = append(data, '\n')
	if a.OK {
		data = append(data, w.held...)
	}
	w.held = nil
	_, _ = w.w.Write(data) // a failed write ends the session's reads too
}

func (w *connWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.discard:
		return len(p), nil
	case !w.answered:
		w.held = append(w.held, p...)
		return len(p), nil
	}
	return w.w.Write(p)
}

// warnf sends an operator warning, one line, for mcpdctl's stderr.
func (w *connWriter) warnf(format string, args ...any) {
	msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(fmt.Sprintf(format, args...))
	_, _ = w.Write([]byte(string(bridge.RelayWarning) + msg + "\n"))
}
