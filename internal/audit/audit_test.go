package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func rec(i int) *Record {
	return &Record{Time: time.Unix(int64(i), 0), Server: "fk", Method: "tools/call", Name: fmt.Sprintf("t%d", i), Outcome: OutcomeResult, GRPCCode: "OK", Cache: "fetched"}
}

// openLog opens a log in a temporary directory.
func openLog(t *testing.T, opts Options) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, path
}

// writeFrom has 8 goroutines write each records to l at once, writer g's
// i'th made by mk(g, i); done (may be nil) is told each Write's result.
func writeFrom(t *testing.T, l *Log, each int, mk func(g, i int) *Record, done func(r *Record, err error)) {
	t.Helper()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range each {
				r := mk(g, i)
				err := l.Write(r)
				if done != nil {
					done(r, err)
				} else if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// plain is writer g's i'th record, nothing more.
func plain(g, i int) *Record { return rec(g*1000 + i) }

// readNames reads the records of files, checking each with check (may be
// nil), and returns their names.
func readNames(t *testing.T, check func(r *Record), files ...string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range files {
		if err := ReadFile(f, func(r *Record, _ []byte) error {
			if check != nil {
				check(r)
			}
			seen[r.Name] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return seen
}

// Concurrent writers get one whole line each.
func TestConcurrentWritesAreWholeLines(t *testing.T) {
	l, path := openLog(t, Options{})
	writeFrom(t, l, 200, plain, nil)
	l.Close()
	if seen := readNames(t, nil, path); len(seen) != 1600 {
		t.Fatalf("%d distinct records, want 1600", len(seen))
	}
}

// slowWriter counts the writes to the file and makes each take a while,
// so that records arrive while one is being written.
type slowWriter struct {
	w      io.Writer
	writes atomic.Int64
}

func (s *slowWriter) Write(b []byte) (int, error) {
	s.writes.Add(1)
	time.Sleep(2 * time.Millisecond)
	return s.w.Write(b)
}

// Records that come while another is written go out together.
func TestRecordsWaitingAreWrittenTogether(t *testing.T) {
	l, path := openLog(t, Options{})
	slow := &slowWriter{w: l.w}
	l.w = slow
	writeFrom(t, l, 20, plain, nil)
	l.Close()
	if seen := readNames(t, nil, path); len(seen) != 160 {
		t.Fatalf("%d distinct records, want 160", len(seen))
	}
	if n := slow.writes.Load(); n >= 80 {
		t.Errorf("%d writes for 160 records from 8 writers, want fewer than 80", n)
	}
}

// Records that wait together for one write still rotate at MaxSize, each
// file holding whole lines, none lost.
func TestConcurrentWritesRotate(t *testing.T) {
	l, path := openLog(t, Options{MaxSize: 4000, Keep: 64})
	writeFrom(t, l, 100, plain, nil)
	l.Close()
	for _, f := range logFiles(path) {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 4000 {
			t.Errorf("%s is %d bytes, over the bound", f, st.Size())
		}
	}
	if seen := readNames(t, nil, logFiles(path)...); len(seen) != 800 {
		t.Fatalf("%d distinct records, want 800", len(seen))
	}
}

// Records larger than the kept batch buffer, written among small ones,
// come back whole: a batch's buffer is never filled while it is written.
func TestConcurrentLargeRecords(t *testing.T) {
	l, path := openLog(t, Options{MaxSize: 64 << 20})
	big := json.RawMessage(`{"x":"` + strings.Repeat("a", maxKeptBuf) + `"}`)
	writeFrom(t, l, 50, func(g, i int) *Record {
		r := plain(g, i)
		if i%5 == 0 {
			r.Args = big
		}
		return r
	}, nil)
	l.Close()
	seen := readNames(t, func(r *Record) {
		if len(r.Args) > 0 && !bytes.Equal(r.Args, big) {
			t.Errorf("record %s: arguments changed", r.Name)
		}
	}, path)
	if len(seen) != 400 {
		t.Fatalf("%d distinct records, want 400", len(seen))
	}
}

// Close among writers: every Write either fails with ErrClosed or has its
// record in the file.
func TestCloseAmongWriters(t *testing.T) {
	l, path := openLog(t, Options{})
	var mu sync.Mutex
	ok := map[string]bool{}
	closed := make(chan error, 1)
	go func() { // owned: waited for below
		time.Sleep(time.Millisecond)
		closed <- l.Close()
	}()
	writeFrom(t, l, 300, plain, func(r *Record, err error) {
		switch {
		case err == nil:
			mu.Lock()
			ok[r.Name] = true
			mu.Unlock()
		case !errors.Is(err, ErrClosed):
			t.Error(err)
		}
	})
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	seen := readNames(t, nil, path)
	for name := range ok {
		if !seen[name] {
			t.Errorf("record %s: Write returned nil, not in the file", name)
		}
	}
}

// Rotation keeps every file under MaxSize and at most Keep old ones.
func TestRotationKeepsTheBound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	l, err := Open(path, Options{MaxSize: 2000, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := l.Write(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	files := logFiles(path)
	if len(files) != 3 {
		t.Fatalf("files %v, want the log and 2 rotated", files)
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Fatal("a third rotated file was kept")
	}
	var last int64 = -1
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 2000 {
			t.Fatalf("%s is %d bytes, over the bound", f, st.Size())
		}
		if err := ReadFile(f, func(r *Record, _ []byte) error {
			if r.Time.Unix() <= last {
				t.Fatalf("records out of order in %s", f)
			}
			last = r.Time.Unix()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if last != 499 {
		t.Fatalf("newest record %d, want 499", last)
	}
}

// A file whose last line was cut short gets a newline before the next
// record, which reads back whole.
func TestReopenAfterCutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(`{"time":"2026-01-01T00:00:00Z","server":"a","method":"tools/call"}`+"\n"+`{"time":"20`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(rec(7)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	data, _ := os.ReadFile(path)
	if !bytes.HasSuffix(data, []byte("\n")) || bytes.Count(data, []byte("\n")) != 3 {
		t.Fatalf("file %q", data)
	}
	var names []string
	ReadFile(path, func(r *Record, _ []byte) error { names = append(names, r.Server+r.Name); return nil })
	if len(names) != 2 || names[1] != "fkt7" {
		t.Fatalf("records %v", names)
	}
}

func BenchmarkWrite(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), FileName), Options{MaxSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := rec(1)
	r.ArgsDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}

// SetLimits applies at once: a smaller size rotates at the next write, a
// lower Keep removes the older files at the next rotation; a Write after
// Close is ErrClosed.
func TestSetLimitsAndClosed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	l, err := Open(path, Options{MaxSize: 1 << 20, Keep: 4})
	if err != nil {
		t.Fatal(err)
	}
	write := func(n int) {
		for i := range n {
			if err := l.Write(rec(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(50)
	l.SetLimits(Options{MaxSize: 1000, Keep: 4})
	write(100)
	for i := 1; i <= 4; i++ {
		if _, err := os.Stat(path + "." + fmt.Sprint(i)); err != nil {
			t.Fatalf("rotated file %d: %v", i, err)
		}
	}
	l.SetLimits(Options{MaxSize: 1000, Keep: 1})
	write(20)
	for i := 2; i <= 5; i++ {
		if _, err := os.Stat(path + "." + fmt.Sprint(i)); !os.IsNotExist(err) {
			t.Errorf("rotated file %d kept past Keep 1: %v", i, err)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Size() > 1000 {
		t.Errorf("live file %v %v, want at most 1000 bytes", st.Size(), err)
	}
	l.Close()
	if err := l.Write(rec(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close = %v, want ErrClosed", err)
	}
}

// appendRecord writes what json.Marshal writes of a record, escapes,
// omitted members and all.
func TestAppendRecordMatchesMarshal(t *testing.T) {
	when := time.Date(2026, 7, 28, 12, 30, 45, 123456789, time.FixedZone("x", 3600))
	recs := []Record{
		{Time: when.UTC(), UID: -1, Front: FrontGRPC, Server: "s", Method: "tools/call", Outcome: OutcomeResult, GRPCCode: "OK", Cache: "fetched"},
		{Time: when, App: `a "quoted" <app> & co`, Version: "1\n2", Pid: 42, UID: 1000, Front: FrontHTTP, Profile: "p",
			Server: "srv", Method: "resources/read", Name: "file:///tmp/ü\u2028x", ArgsDigest: "sha256:ab",
			Args: json.RawMessage("{ \"a\" : [1, 2],\n \"b\":\"<x>\" }"), Outcome: OutcomeRPCError, RPCCode: -32602,
			GRPCCode: "OK", Error: "bad\x00\x1f\\ \xff", DurationUs: 1234, Cache: "hit"},
		{},
	}
	for _, r := range recs {
		got, err := appendRecord([]byte("prefix"), &r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		// Bytes differ only where RawMessage is HTML-escaped by Marshal;
		// the decoded values must be the same.
		var g, w any
		if err := json.Unmarshal(bytes.TrimSuffix(bytes.TrimPrefix(got, []byte("prefix")), []byte("\n")), &g); err != nil {
			t.Fatalf("appendRecord wrote invalid JSON %s: %v", got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("appendRecord:\n%s\njson.Marshal:\n%s", got, want)
		}
		if len(r.Args) == 0 && string(got) != "prefix"+string(want)+"\n" {
			t.Errorf("bytes differ:\n%s\n%s", got, want)
		}
	}
}

// A rotation that fails (here a directory where the rotated file would
// go) loses no record: they go on to the current file, the first Write
// reports ErrNotRotated, the next ones wait for rotateRetry quietly, and
// a later try rotates.
func TestRotateFailureKeepsWriting(t *testing.T) {
	l, path := openLog(t, Options{MaxSize: 1000, Keep: 1})
	if err := os.MkdirAll(filepath.Join(path+".1", "busy"), 0o700); err != nil {
		t.Fatal(err)
	}
	var notRotated int
	for i := range 40 {
		switch err := l.Write(rec(i)); {
		case errors.Is(err, ErrNotRotated):
			notRotated++
		case err != nil:
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if notRotated != 1 {
		t.Errorf("%d writes reported ErrNotRotated, want 1 (then none until the retry)", notRotated)
	}
	if seen := readNames(t, nil, path); len(seen) != 40 {
		t.Fatalf("%d records in the live file, want all 40", len(seen))
	}

	if err := os.RemoveAll(path + ".1"); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.rotateAfter = time.Time{} // the retry is due
	l.mu.Unlock()
	if err := l.Write(rec(40)); err != nil {
		t.Fatalf("write after the cause went away: %v", err)
	}
	l.Close()
	if seen := readNames(t, nil, path+".1"); len(seen) != 40 {
		t.Errorf("%d records in the rotated file, want 40", len(seen))
	}
	if seen := readNames(t, nil, path); len(seen) != 1 {
		t.Errorf("%d records in the new file, want 1", len(seen))
	}
}

// A new file that cannot be created leaves every rotated file as it was,
// however often the rotation is tried again; the records go on to the
// live file, and the rotation that finally works loses nothing.
func TestRotateCreateFailureKeepsFiles(t *testing.T) {
	l, path := openLog(t, Options{MaxSize: 1000, Keep: 3})
	write := func(from, n int) (notRotated int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			switch err := l.Write(rec(i)); {
			case errors.Is(err, ErrNotRotated):
				notRotated++
			case err != nil:
				t.Fatalf("write %d: %v", i, err)
			}
		}
		return notRotated
	}
	write(0, 40) // the log and three rotated files
	counts := func() []int {
		var out []int
		for _, f := range []string{path + ".3", path + ".2", path + ".1"} {
			out = append(out, len(readNames(t, nil, f)))
		}
		return out
	}
	before := counts()
	if before[0] == 0 {
		t.Fatalf("rotated files %v: want all three written", before)
	}
	// Something in the way of the new file (as EMFILE or ENOSPC would be).
	if err := os.MkdirAll(filepath.Join(path+".next", "busy"), 0o700); err != nil {
		t.Fatal(err)
	}
	live := len(readNames(t, nil, path))
	for try := range 3 {
		l.mu.Lock()
		l.rotateAfter = time.Time{}
		l.mu.Unlock()
		if n := write(100+try*10, 10); n != 1 {
			t.Fatalf("try %d: %d writes reported ErrNotRotated, want 1", try, n)
		}
		if got := counts(); !slices.Equal(got, before) {
			t.Fatalf("try %d: rotated files hold %v records, want %v as before", try, got, before)
		}
	}
	if got := len(readNames(t, nil, path)); got != live+30 {
		t.Fatalf("live file holds %d records, want %d", got, live+30)
	}
	if err := os.RemoveAll(path + ".next"); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.rotateAfter = time.Time{}
	l.mu.Unlock()
	if n := write(200, 1); n != 0 {
		t.Fatal("the rotation failed with nothing in its way")
	}
	l.Close()
	if got := len(readNames(t, nil, path+".1")); got != live+30 {
		t.Errorf("rotated file holds %d records, want the %d of the live file", got, live+30)
	}
	if _, err := os.Stat(path + ".next"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
}

// Lines that are JSON but not records (no time or method) are skipped.
func TestReadSkipsNonRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	data := `{"a":1}` + "\n" + `{"time":"2026-12-06T00:00:00Z","server":"s","method":"tools/call","name":"ok"}` + "\n" + `[1,2]` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if seen := readNames(t, nil, path); len(seen) != 1 || !seen["ok"] {
		t.Fatalf("records %v, want only ok", seen)
	}
}

// logFiles is the log's files oldest first: <path>.N … <path>.1, as many
// as exist, then path.
func logFiles(path string) []string {
	out := []string{path}
	for i := 1; ; i++ {
		p := path + "." + strconv.Itoa(i)
		if _, err := os.Stat(p); err != nil {
			break
		}
		out = append(out, p)
	}
	slices.Reverse(out)
	return out
}
