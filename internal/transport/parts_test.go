package transport

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestWriteMessageParts: a message given as parts reaches the child as
// one line, their concatenation: small parts gathered into one write, large
// ones written in place, an empty part skipped; and a part with a raw
// newline gets the whole message compacted, as WriteMessage does.
func TestWriteMessageParts(t *testing.T) {
	p := startChild(t, "echo", nil)
	big := []byte(`"` + strings.Repeat("x", 3<<20) + `"`)
	cases := [][][]byte{
		{[]byte(`{"a":1`), []byte(`,"b":2}`)},
		{nil, []byte(`{"a":`), big, nil, []byte(`,"b":`), big, []byte(`}`)},
		{[]byte(`{"a":`), big, []byte("\n}")},
		{[]byte(`{"a":`), big, []byte(`}`)},
	}
	for i, parts := range cases {
		if err := p.WriteMessageParts(context.Background(), parts); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got, err := p.ReadMessage()
		if err != nil {
			t.Fatalf("case %d: read: %v", i, err)
		}
		want := bytes.ReplaceAll(bytes.Join(parts, nil), []byte("\n"), nil)
		if !bytes.Equal(got, want) {
			t.Errorf("case %d: got %d bytes %.40q…, want %d bytes %.40q…", i, len(got), got, len(want), want)
		}
	}
}
