package remote

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	in := ": ok\n\nevent: message\nid: 7\ndata: {\"a\":1}\n\nretry: 1500\nid: 8\ndata:\n\ndata: x\r\ndata: y\r\n\r\nevent: endpoint\ndata: /m?s=1\n\n"
	r := newSSEReader(strings.NewReader(in), 1<<20)
	var got []string
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+"|"+ev.ID+"|"+string(ev.Data))
	}
	want := []string{"message|7|{\"a\":1}", "|8|", "||x\ny", "endpoint||/m?s=1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
	if r.retry.Milliseconds() != 1500 {
		t.Fatalf("retry %s", r.retry)
	}
}

func TestSSEReaderOversizeAndTruncation(t *testing.T) {
	r := newSSEReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\ndata: ok\n\ndata: cut"), 10)
	ev, err := r.next()
	if err != nil || !ev.Oversize || ev.Size != 100 {
		t.Fatalf("oversize event: %+v %v", ev, err)
	}
	if ev, err = r.next(); err != nil || string(ev.Data) != "ok" {
		t.Fatalf("next: %+v %v", ev, err)
	}
	if _, err = r.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut event: %v", err)
	}
}
