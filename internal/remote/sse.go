package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// event is one Server-Sent Event.
type event struct {
	// Type is the "event:" field; "" means "message".
	Type string
	// ID is the "id:" field, if the event had one.
	ID    string
	HasID bool
	// Data is the "data:" lines joined with "\n".
	Data []byte
	// Oversize is set when Data was longer than the reader's limit; Data
	// then holds only its start (at most oversizePrefix bytes) and Size
	// the whole length.
	Oversize bool
	Size     int
}

// oversizePrefix is how much of an oversize event's data is kept.
const oversizePrefix = 4096

// maxSSELine bounds one line of an SSE stream other than data (field
// names, ids, comments): a stream that sends more is broken.
const maxSSELine = 64 << 10

// errSSELine is the error of a field line longer than maxSSELine.
var errSSELine = errors.New("SSE line too long")

// sseReader parses an SSE stream (the WHATWG event-stream format) into
// events, holding at most max bytes of data per event.
type sseReader struct {
	rd  *bufio.Reader
	max int
	// retry is the last "retry:" field, zero if none was sent.
	retry time.Duration
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{rd: bufio.NewReaderSize(r, 32<<10), max: max}
}

// next returns the next event with data; events without a data line
// (a priming event that only sets an id, comments) update the id and are
// skipped, except that an id-only event is returned with empty Data so that
// the caller learns the resumption point. It returns io.EOF at a clean end
// of the stream (between events) and io.ErrUnexpectedEOF when it ends in
// the middle of one.
func (s *sseReader) next() (event, error) {
	var ev event
	started := false
	var data bytes.Buffer
	dataLines := 0
	for {
		line, err := s.line(&ev, &data, &dataLines)
		if err != nil {
			if err == io.EOF && started {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		if line == nil { // blank line: dispatch
			if dataLines == 0 && !ev.HasID {
				started = false
				ev = event{}
				continue
			}
			ev.Data = data.Bytes()
			return ev, nil
		}
		started = true
	}
}

// line reads one line and applies its field to ev; it returns nil at a
// blank line and a non-nil slice otherwise. Data lines are appended to data
// up to the limit and beyond it only counted.
func (s *sseReader) line(ev *event, data *bytes.Buffer, dataLines *int) ([]byte, error) {
	// A data line may be as long as the limit; read it piecewise.
	field, err := s.readField()
	if err != nil {
		return nil, err
	}
	if field == nil {
		return nil, nil
	}
	name, hasColon := field, false
	if i := bytes.IndexByte(field, ':'); i >= 0 {
		name, hasColon = field[:i], true
	}
	switch string(name) {
	case "":
		return field, nil // a comment (": ok", keep-alives)
	case "data":
		if *dataLines > 0 {
			s.appendData(ev, data, []byte{'\n'})
		}
		*dataLines++
		return field, s.readData(ev, data, hasColon)
	}
	var value []byte
	if err := s.restOfLine(&value); err != nil {
		return nil, err
	}
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "event":
		ev.Type = string(value)
	case "id":
		if !bytes.ContainsRune(value, 0) {
			ev.ID, ev.HasID = string(value), true
		}
	case "retry":
		if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
	return field, nil
}

// readField reads a line up to its first colon (or its end); nil means a
// blank line. The returned slice includes the colon when there is one.
func (s *sseReader) readField() ([]byte, error) {
	var out []byte
	for {
		b, err := s.rd.ReadByte()
		if err != nil {
			if err == io.EOF && len(out) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch b {
		case '\n':
			if len(out) == 0 {
				return nil, nil
			}
			_ = s.rd.UnreadByte() // the line's end, for restOfLine or readData
			return out, nil
		case '\r':
			continue // CRLF line ends; a lone CR is not a line end here
		case ':':
			return append(out, b), nil
		}
		if len(out) >= maxSSELine {
			return nil, errSSELine
		}
		out = append(out, b)
	}
}

// restOfLine appends the rest of the current line (after the field's
// colon) to value, without the line end.
func (s *sseReader) restOfLine(value *[]byte) error {
	for {
		b, err := s.rd.ReadByte()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch b {
		case '\n':
			return nil
		case '\r':
			continue
		}
		if len(*value) >= maxSSELine {
			return errSSELine
		}
		*value = append(*value, b)
	}
}

// readData reads the value of a data line into data, within the limit.
func (s *sseReader) readData(ev *event, data *bytes.Buffer, hasColon bool) error {
	first := true
	for {
		chunk, err := s.rd.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		full := err == nil
		if full {
			chunk = bytes.TrimSuffix(chunk, []byte("\n"))
			chunk = bytes.TrimSuffix(chunk, []byte("\r"))
		}
		if first && hasColon {
			chunk = bytes.TrimPrefix(chunk, []byte(" "))
		}
		first = false
		s.appendData(ev, data, chunk)
		if full {
			return nil
		}
	}
}

func (s *sseReader) appendData(ev *event, data *bytes.Buffer, b []byte) {
	ev.Size += len(b)
	if ev.Oversize {
		return
	}
	if data.Len()+len(b) > s.max {
		ev.Oversize = true
		keep := b[:min(len(b), max(oversizePrefix-data.Len(), 0))]
		data.Write(keep)
		return
	}
	data.Write(b)
}

func (e event) String() string { return fmt.Sprintf("event %q id %q (%d bytes)", e.Type, e.ID, e.Size) }
