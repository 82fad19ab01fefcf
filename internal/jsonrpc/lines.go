package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// OversizePrefix is how much of an oversize line LineReader keeps, to
// find its id: room for the "jsonrpc" and "id" members, which SDKs write
// first.
const OversizePrefix = 4 << 10

// LineReader reads newline-delimited messages, each at most max bytes
// without its line ending. A longer line is not buffered whole: its start
// is kept and the rest discarded.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// NewLineReader reads lines of at most max bytes from in.
func NewLineReader(in io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(in, 64<<10), max: max}
}

// OversizeLine is a discarded line: its first bytes and its size (at least
// that, if the input ended within it).
type OversizeLine struct {
	Prefix []byte
	Size   int
}

// Next returns the next line without its ending, or, for a line longer
// than max, a nil line and the OversizeLine. err is io.EOF after the last
// line. The line is the caller's: a fresh slice, never written again.
//
// A line longer than the read buffer is gathered in blocks of growing size
// and copied once into a slice of its exact size: growing one slice by
// append would allocate the line's size several times over (every growth
// copies it), which for lines of tens of MiB is what a daemon's peak
// memory is made of.
func (lr *LineReader) Next() (line []byte, over *OversizeLine, err error) {
	var (
		blocks [][]byte // full blocks of a long line, in order
		acc    []byte   // the block being filled
	)
	size := 0
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += len(chunk)
		switch {
		case over != nil:
		case size-lineEnding(lastBytes(blocks, acc), chunk) > lr.max:
			over = &OversizeLine{Prefix: head(firstBytes(blocks, acc), chunk)}
			blocks, acc = nil, nil
		case acc == nil && errors.Is(err, bufio.ErrBufferFull):
			acc = append(make([]byte, 0, 2*len(chunk)), chunk...)
		case len(acc)+len(chunk) > cap(acc) && acc != nil:
			n := copy(acc[len(acc):cap(acc)], chunk)
			blocks = append(blocks, acc[:cap(acc)])
			acc = append(make([]byte, 0, min(2*cap(acc), maxLineBlock)), chunk[n:]...)
		default:
			acc = append(acc, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over != nil {
			over.Size = size - lineEnding(nil, chunk)
			return nil, over, err
		}
		if blocks == nil {
			return acc, nil, err
		}
		out := make([]byte, 0, size)
		for _, b := range blocks {
			out = append(out, b...)
		}
		return append(out, acc...), nil, err
	}
}

// maxLineBlock bounds the blocks a long line is gathered in.
const maxLineBlock = 4 << 20

// firstBytes is the start of a long line gathered so far: its first block.
func firstBytes(blocks [][]byte, acc []byte) []byte {
	if len(blocks) > 0 {
		return blocks[0]
	}
	return acc
}

// lastBytes is the end of a long line gathered so far, enough to see a
// '\r' before the chunk that ends it.
func lastBytes(blocks [][]byte, acc []byte) []byte {
	if len(acc) == 0 && len(blocks) > 0 {
		return blocks[len(blocks)-1]
	}
	return acc
}

// head is a copy of the first OversizePrefix bytes of acc followed by
// chunk.
func head(acc, chunk []byte) []byte {
	out := make([]byte, 0, OversizePrefix)
	out = append(out, acc[:min(len(acc), OversizePrefix)]...)
	return append(out, chunk[:min(len(chunk), OversizePrefix-len(out))]...)
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

// PrefixMembers scans the top-level members of the JSON object whose start
// is prefix, in order, until one is cut off; it returns the "id" if it was
// read whole and is a string or a number, and reports whether a "result"
// or "error" member (a response) was seen. Values are skipped whole, so an
// "id" inside params is never taken.
func PrefixMembers(prefix []byte) (id json.RawMessage, response bool) {
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
