package transport

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The OnOversize handler gets every oversize line, on the long path, within
// the read buffer and at EOF, with the start of the line kept as written,
// its size without the line ending, and the limit, in stream order.
func TestOnOversize(t *testing.T) {
	if n := len(oversizeLong); n != 2*stdoutBufferSize-1 {
		t.Fatalf("len(oversizeLong) = %d, want %d", n, 2*stdoutBufferSize-1)
	}
	p := startChild(t, "oversize", func(o *Options) { o.MaxLineSize = oversizeMax })
	var events []string
	var lines []OversizeLine
	p.OnOversize(func(l OversizeLine) {
		events = append(events, fmt.Sprintf("oversize %d", l.Size))
		lines = append(lines, l)
	})
	readAll(t, p, func(msg string) { events = append(events, msg) })

	wantEvents := []string{
		fmt.Sprintf("oversize %d", len(oversizeLong)),
		`{"n":1}`,
		fmt.Sprintf("oversize %d", len(oversizeShort)),
		oversizeEdge,
		`{"n":2}`,
		fmt.Sprintf("oversize %d", len(oversizeLast)),
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%.2000s", diff)
	}
	// The prefixes are copies: the read buffer has been reused since.
	want := []OversizeLine{
		{Prefix: []byte(oversizeLong[:OversizePrefixLen]), Size: len(oversizeLong), MaxLineSize: oversizeMax},
		{Prefix: []byte(oversizeShort[:OversizePrefixLen]), Size: len(oversizeShort), MaxLineSize: oversizeMax},
		{Prefix: []byte(oversizeLast[:OversizePrefixLen]), Size: len(oversizeLast), MaxLineSize: oversizeMax},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("oversize lines (-want +got):\n%.2000s", diff)
	}
	<-p.Done()
	if got := p.Stats(); got != (Stats{LinesOversize: 3}) {
		t.Errorf("stats = %+v, want 3 oversize lines", got)
	}
}

// A prefix is never longer than the line: with a limit below
// OversizePrefixLen the whole line is kept.
func TestOnOversizeShortLine(t *testing.T) {
	p := startChild(t, "mixed-small", func(o *Options) { o.MaxLineSize = 16 })
	var got []OversizeLine
	p.OnOversize(func(l OversizeLine) { got = append(got, l) })
	for {
		if _, err := p.ReadMessage(); err != nil {
			break
		}
	}
	line := `{"toolong":"xxxxxxxxxx"}`
	want := []OversizeLine{{Prefix: []byte(line), Size: len(line), MaxLineSize: 16}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("oversize lines (-want +got):\n%s", diff)
	}
}
