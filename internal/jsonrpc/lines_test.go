package jsonrpc

import (
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// readAll reads every line of in with a reader of max bytes; an oversize
// line shows as "OVER <size> <prefix>".
func readAll(t *testing.T, in string, max int) []string {
	t.Helper()
	lr := NewLineReader(strings.NewReader(in), max)
	var out []string
	for {
		line, over, err := lr.Next()
		switch {
		case over != nil:
			out = append(out, "OVER "+strconv.Itoa(over.Size)+" "+string(over.Prefix))
		case len(line) > 0:
			out = append(out, string(line))
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
	}
}

func TestLineReaderBounds(t *testing.T) {
	got := readAll(t, "abc\n12345\r\n123456\nxy", 5)
	want := []string{"abc\n", "12345\r\n", "OVER 6 123456\n", "xy"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A line far larger than the reader's buffer is discarded, not buffered:
// only OversizePrefix bytes of it are kept, and the next line is read.
func TestLineReaderHugeLine(t *testing.T) {
	huge := `{"id":9,"x":"` + strings.Repeat("a", 1<<20) + `"}`
	got := readAll(t, huge+"\nok\n", 1000)
	if len(got) != 2 || got[1] != "ok\n" {
		t.Fatalf("got %d lines, want the oversize one and ok", len(got))
	}
	wantHead := "OVER " + strconv.Itoa(len(huge)) + " " + huge[:OversizePrefix]
	if got[0] != wantHead {
		t.Errorf("oversize line reported as %.60q…, want %.60q…", got[0], wantHead)
	}
}

func TestPrefixMembers(t *testing.T) {
	tests := []struct {
		prefix   string
		id       string
		response bool
	}{
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"x":"yy`, `4`, false},
		{`{"jsonrpc":"2.0","id":"a","result":{"x":"yy`, `"a"`, true},
		{`{"jsonrpc":"2.0","method":"m","params":{"id":3,"x":"yy`, ``, false},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"`, ``, false},
		{`{"jsonrpc":"2.0","error":{"code":1},"id":-2,"x`, `-2`, true},
		{`[1,2`, ``, false},
	}
	for _, tt := range tests {
		id, response := PrefixMembers([]byte(tt.prefix))
		if string(id) != tt.id || response != tt.response {
			t.Errorf("PrefixMembers(%q) = %s, %v; want %s, %v", tt.prefix, id, response, tt.id, tt.response)
		}
	}
}

// TestLineReaderLongLines: lines longer than the read buffer come back
// whole and exact, whatever their size against the blocks they are
// gathered in, a "\r\n" split across reads included; and reading one
// allocates about twice its size (its blocks, then the line), not the
// several times that growing one slice costs.
func TestLineReaderLongLines(t *testing.T) {
	for _, n := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1, 128<<10 - 1, 200 << 10, 3<<20 + 17, 9 << 20} {
		line := strings.Repeat("a", n-1) + "\r\n"
		got := readAll(t, line+"x\n", n+1)
		if len(got) != 2 || got[0] != line || got[1] != "x\n" {
			t.Fatalf("%d bytes: got %d lines (first %d bytes), want the line and x", n, len(got), len(got[0]))
		}
		if over := readAll(t, line, n-2); len(over) != 1 || !strings.HasPrefix(over[0], "OVER ") {
			t.Fatalf("%d bytes against a bound of %d: %.40q", n-1, n-2, over)
		}
	}
	const n = 16 << 20
	in := strings.Repeat("a", n) + "\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	line, _, _ := NewLineReader(strings.NewReader(in), n+1).Next()
	runtime.ReadMemStats(&after)
	if len(line) != n+1 {
		t.Fatalf("line of %d bytes, want %d", len(line), n+1)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*5/2 {
		t.Errorf("reading a %d MiB line allocated %.1f times its size, want at most 2.5", n>>20, float64(alloc)/n)
	}
}
