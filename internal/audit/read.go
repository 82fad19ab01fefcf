package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
)

// maxLine bounds one line read back (a record with full arguments can be
// as large as a request).
const maxLine = 64 << 20

// ReadFile calls fn for each record of one file, in order, with the raw
// line; lines that are not records (a line cut short by a machine crash)
// are skipped. A missing file has no records.
func ReadFile(path string, fn func(r *Record, line []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = ReadFrom(f, fn)
	return err
}

// ReadFrom reads records from r as ReadFile does and returns how many bytes
// of whole lines it consumed (a last line without its newline is left).
func ReadFrom(r io.Reader, fn func(r *Record, line []byte) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	for {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) && len(line) < maxLine {
			more := append([]byte(nil), line...)
			line, err = br.ReadSlice('\n')
			line = append(more, line...)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		n += int64(len(line))
		var rec Record
		if json.Unmarshal(line, &rec) != nil || rec.Time.IsZero() || rec.Method == "" {
			continue // not a record
		}
		if err := fn(&rec, line); err != nil {
			return n, err
		}
	}
}
