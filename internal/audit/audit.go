// Package audit writes mcpd's audit log: one JSON object a line for every
// tool call, prompt get and resource read an app makes, in a file under
// mcpd's state directory that is rotated by size.
//
// A record is written with write(2) on a file opened O_APPEND before the
// answer is returned to the app (records that come while another is being
// written go together in the next write), so a record is in the kernel by
// the time the app sees its call complete: killing mcpd (even SIGKILL) loses
// no record of a call an app saw complete, and leaves only whole lines.
// (A machine crash can lose what the kernel had not written back; the log
// is not fsynced per record.) When the file would grow past MaxSize it is
// renamed to <file>.1 (.1 to .2 and so on, Keep files kept) and a new one
// is started; when that fails, records go on to the current file and the
// rotation is tried again a while later.
package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// FileName is the audit log's name in the state directory.
const FileName = "audit.jsonl"

// Fronts an app reaches mcpd by.
const (
	FrontGRPC   = "grpc"
	FrontBridge = "bridge"
	FrontHTTP   = "http"
)

// Outcomes of a request.
const (
	// OutcomeResult: the server answered with a result.
	OutcomeResult = "result"
	// OutcomeToolError: a tools/call result with isError true.
	OutcomeToolError = "tool_error"
	// OutcomeRPCError: the server answered with a JSON-RPC error (RPCCode).
	OutcomeRPCError = "rpc_error"
	// OutcomeError: mcpd failed the call (GRPCCode says how).
	OutcomeError = "error"
)

// Record is one line of the audit log.
type Record struct {
	Time time.Time `json:"time"`
	// App is the app's client name, Pid and UID its process's credentials
	// from the connection (SO_PEERCRED); 0 and -1 when unknown.
	App     string `json:"app,omitempty"`
	Version string `json:"appVersion,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	UID     int    `json:"uid"`
	// Front is FrontGRPC, FrontBridge or FrontHTTP.
	Front   string `json:"front"`
	Profile string `json:"profile,omitempty"`
	Server  string `json:"server"`
	// Method is the MCP method; Name the tool or prompt name or the
	// resource URI.
	Method string `json:"method"`
	Name   string `json:"name,omitempty"`
	// ArgsDigest is "sha256:" and the hex digest of the arguments as the
	// app sent them; Args the arguments themselves, when the config asks.
	ArgsDigest string          `json:"argsDigest,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Outcome    string          `json:"outcome"`
	RPCCode    int64           `json:"rpcCode,omitempty"`
	GRPCCode   string          `json:"grpcCode"`
	Error      string          `json:"error,omitempty"`
	DurationUs int64           `json:"durationUs"`
	// Cache is "hit", "coalesced" or "fetched".
	Cache string `json:"cache"`
}

// ErrClosed is the error of a Write after Close.
var ErrClosed = errors.New("audit log: closed")

// ErrNotRotated is matched (errors.Is) by the error of a Write whose
// record was written but could not rotate the file first (a rename or a
// create refused): the record went to the current file, past MaxSize, and
// rotation is tried again after rotateRetry.
var ErrNotRotated = errors.New("audit log: not rotated")

// rotateRetry is how long a file that could not be rotated grows before
// the next try: a warning per try (for each record of the batch that
// tried), not one per record.
const rotateRetry = 10 * time.Second

// Options configure a Log.
type Options struct {
	// MaxSize is the size past which the file is rotated (bytes; default
	// 16 MiB).
	MaxSize int64
	// Keep is how many rotated files are kept (default 3).
	Keep int
}

// Log is an open audit log. Its methods are safe for concurrent use.
type Log struct {
	path    string
	maxSize int64
	keep    int

	mu      sync.Mutex // guards following
	wrote   sync.Cond  // on mu: a batch was written, or the writer left
	f       *os.File
	w       io.Writer // f, or its rawio.Writer where f is on a local disk
	size    int64
	writing bool   // a Write is writing a batch (outside mu)
	closing bool   // Close waits for the queued records: no more are taken
	queued  *batch // the records waiting for the next writer; nil: none
	buf     []byte // queued's records
	spare   []byte // a written batch's buffer, for the next one
	// rotateAfter is when a rotation that failed may be tried again.
	rotateAfter time.Time
}

// batch is records written by one write(2): those that came while the
// one before was being written (see Write).
type batch struct {
	written bool
	err     error
}

// Open opens (creating) the log at path, mode 0600 in a 0700 directory. A
// file whose last line was cut short (a machine crash) gets a newline, so
// the next record starts a line of its own.
func Open(path string, opts Options) (*Log, error) {
	opts = withDefaults(opts)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	l := &Log{path: path, maxSize: opts.MaxSize, keep: opts.Keep}
	l.wrote.L = &l.mu
	if err := l.open(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return l, nil
}

// SetLimits changes the size past which the file is rotated and how many
// rotated files are kept (zero or less: the defaults), as a reload asks;
// the next write rotates if the file is already past the new size, and the
// next rotation removes the files past the new count.
func (l *Log) SetLimits(opts Options) {
	opts = withDefaults(opts)
	l.mu.Lock()
	l.maxSize, l.keep = opts.MaxSize, opts.Keep
	l.mu.Unlock()
}

// withDefaults fills in the defaults of unset options.
func withDefaults(opts Options) Options {
	if opts.MaxSize <= 0 {
		opts.MaxSize = 16 << 20
	}
	if opts.Keep <= 0 {
		opts.Keep = 3
	}
	return opts
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return l.use(f)
}

// use makes f, opened for appending at l.path, the file written to.
func (l *Log) use(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	l.w = io.Writer(f)
	if w, err := rawio.NewFileWriter(f); err == nil {
		l.w = w
	}
	if l.size > 0 && !endsWithNewline(l.path, l.size) {
		n, _ := f.Write([]byte{'\n'})
		l.size += int64(n)
	}
	return nil
}

func endsWithNewline(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

// Write appends r as one line; it returns once the line is in the kernel.
//
// One Write at a time writes. Records that come meanwhile wait together,
// and the first of them to find the writer gone writes them all with one
// write(2): under many calls at once that is fewer system calls, and
// every record is still in the kernel before its Write returns.
func (l *Log) Write(r *Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.closing {
		return ErrClosed
	}
	n := len(l.buf)
	buf, err := appendRecord(l.buf, r)
	if err != nil {
		l.buf = buf[:n]
		return fmt.Errorf("audit log: %w", err)
	}
	l.buf = buf
	if l.queued == nil {
		l.queued = &batch{}
	}
	b := l.queued
	for l.writing && !b.written {
		l.wrote.Wait()
	}
	if !b.written {
		l.writeQueued() // b is still the queued batch: nobody wrote it
	}
	return b.err
}

// writeQueued writes the queued batch: outside mu with writing set, or,
// when it would take the file past maxSize, under mu a line at a time. mu
// is held on entry and on return. A failed write fails every record of the
// batch, though some may be in the file.
func (l *Log) writeQueued() {
	b, out := l.queued, l.buf
	l.queued, l.buf = nil, l.spare[:0]
	l.spare = nil // now l.buf's: never handed out twice
	defer func() {
		b.written = true
		if cap(out) <= maxKeptBuf {
			l.spare = out[:0]
		}
		l.wrote.Broadcast()
	}()
	if l.f == nil {
		b.err = ErrClosed
		return
	}
	if l.size+int64(len(out)) > l.maxSize && !time.Now().Before(l.rotateAfter) {
		b.err = l.writeRotating(out)
		return
	}
	l.writing = true
	w := l.w
	l.mu.Unlock()
	n, err := w.Write(out)
	l.mu.Lock()
	l.writing = false
	l.size += int64(n)
	if err != nil {
		b.err = l.writeError(w, err)
	}
}

// writeRotating writes out a line at a time under mu, rotating before a
// line that would take the file past maxSize. A rotation that fails loses
// no line: the lines go to the current file, and the error, which wraps
// ErrNotRotated, is returned once they are written.
func (l *Log) writeRotating(out []byte) error {
	var rotErr error
	for len(out) > 0 {
		line := out[:bytes.IndexByte(out, '\n')+1]
		out = out[len(line):]
		if rotErr == nil && l.size > 0 && l.size+int64(len(line)) > l.maxSize {
			if err := l.rotate(); err != nil {
				l.rotateAfter = time.Now().Add(rotateRetry)
				rotErr = fmt.Errorf("%w, records go on to the current file: %w", ErrNotRotated, err)
			}
		}
		n, err := l.w.Write(line)
		l.size += int64(n)
		if err != nil {
			return l.writeError(l.w, err)
		}
	}
	return rotErr
}

// writeError is the error of a write to the file through w.
func (l *Log) writeError(w io.Writer, err error) error {
	if w != io.Writer(l.f) { // a rawio.Writer's error names no file
		err = &os.PathError{Op: "write", Path: l.path, Err: err}
	}
	return fmt.Errorf("audit log: %w", err)
}

// maxKeptBuf bounds the batch buffer kept for the next batch (a record
// with full arguments can be as large as a request).
const maxKeptBuf = 64 << 10

// rotate renames the file to .1 (after shifting the older ones) and starts
// a new one. The new file is created first, under a temporary name, so
// that a create that fails (no descriptors, no space) leaves every file as
// it was; the current file stays open until the new one has its name. On
// an error the log goes on writing to the file it had.
func (l *Log) rotate() error {
	next, err := l.createNext()
	if err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	tmp := next.Name()
	os.Remove(l.rotated(l.keep))
	// Files past a Keep a reload lowered.
	for i := l.keep + 1; os.Remove(l.rotated(i)) == nil; i++ {
	}
	for i := l.keep - 1; i >= 1; i-- {
		os.Rename(l.rotated(i), l.rotated(i+1)) // a missing one is fine
	}
	moved := true
	if err := os.Rename(l.path, l.rotated(1)); err != nil {
		if !os.IsNotExist(err) {
			next.Close()
			os.Remove(tmp)
			return fmt.Errorf("rotate: %w", err)
		}
		moved = false // someone removed the file: start a new one
	}
	if err := os.Rename(tmp, l.path); err != nil {
		next.Close()
		os.Remove(tmp)
		if moved {
			if rerr := os.Rename(l.rotated(1), l.path); rerr != nil {
				// Still writing to the file now named .1, which the
				// next rotation shifts (or, with Keep 1, removes).
				return fmt.Errorf("rotate: %w; and moving %s back: %w", err, l.path, rerr)
			}
		}
		return fmt.Errorf("rotate: %w", err)
	}
	old := l.f
	if err := l.use(next); err != nil {
		// The new file has the name but cannot be used: write on to the
		// old one, now .1, rather than lose records.
		return fmt.Errorf("rotate: %w", err)
	}
	old.Close()
	return nil
}

// createNext creates the file rotate renames to the log's name: new and
// empty, mode 0600. One left by a crash in the middle of a rotation holds
// no record and is replaced.
func (l *Log) createNext() (*os.File, error) {
	tmp := l.path + ".next"
	const flags = os.O_WRONLY | os.O_APPEND | os.O_CREATE | os.O_EXCL
	f, err := os.OpenFile(tmp, flags, 0o600)
	if errors.Is(err, fs.ErrExist) && os.Remove(tmp) == nil {
		f, err = os.OpenFile(tmp, flags, 0o600)
	}
	return f, err
}

func (l *Log) rotated(i int) string { return l.path + "." + strconv.Itoa(i) }

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The records queued before Close are written; later ones are refused.
	l.closing = true
	for l.writing || l.queued != nil {
		l.wrote.Wait()
	}
	l.closing = false
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// appendRecord appends r's JSON and a newline to buf: the JSON
// json.Marshal makes of r (the same members, in the same order, with the
// same values), written without reflection.
func appendRecord(buf []byte, r *Record) ([]byte, error) {
	start := len(buf)
	buf = append(buf, `{"time":`...)
	buf, err := r.Time.AppendText(append(buf, '"'))
	if err != nil {
		return buf[:start], fmt.Errorf("encode time: %w", err)
	}
	buf = append(buf, '"')
	buf = appendField(buf, "app", r.App, true)
	buf = appendField(buf, "appVersion", r.Version, true)
	if r.Pid != 0 {
		buf = strconv.AppendInt(append(buf, `,"pid":`...), int64(r.Pid), 10)
	}
	buf = strconv.AppendInt(append(buf, `,"uid":`...), int64(r.UID), 10)
	buf = appendField(buf, "front", r.Front, false)
	buf = appendField(buf, "profile", r.Profile, true)
	buf = appendField(buf, "server", r.Server, false)
	buf = appendField(buf, "method", r.Method, false)
	buf = appendField(buf, "name", r.Name, true)
	buf = appendField(buf, "argsDigest", r.ArgsDigest, true)
	if len(r.Args) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, r.Args); err != nil {
			return buf[:start], fmt.Errorf("encode args: %w", err)
		}
		buf = append(append(buf, `,"args":`...), c.Bytes()...)
	}
	buf = appendField(buf, "outcome", r.Outcome, false)
	if r.RPCCode != 0 {
		buf = strconv.AppendInt(append(buf, `,"rpcCode":`...), r.RPCCode, 10)
	}
	buf = appendField(buf, "grpcCode", r.GRPCCode, false)
	buf = appendField(buf, "error", r.Error, true)
	buf = strconv.AppendInt(append(buf, `,"durationUs":`...), r.DurationUs, 10)
	buf = appendField(buf, "cache", r.Cache, false)
	return append(buf, "}\n"...), nil
}

// appendField appends the member ,"key":"value" (nothing for an empty
// value when omitEmpty), value escaped as json.Marshal escapes it.
func appendField(buf []byte, key, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return buf
	}
	buf = append(append(append(buf, `,"`...), key...), `":`...)
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(value) // a string always encodes
			return append(buf, q...)
		}
	}
	return append(append(append(buf, '"'), value...), '"')
}
