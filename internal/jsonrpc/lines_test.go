package jsonrpc

import (
	"errors"
	"io"
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
