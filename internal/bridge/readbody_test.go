package bridge

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllSized: a body of known size is read into a buffer of exactly
// that size, however its reads are cut; one of unknown size is read whole;
// a body shorter or longer than its size is an error.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("b", 1<<20+3)
	got, err := readAllSized(iotest.OneByteReader(io.LimitReader(strings.NewReader(body), 1<<16)), 1<<16)
	if err != nil || string(got) != body[:1<<16] || cap(got) != 1<<16 {
		t.Fatalf("known size: %d bytes (cap %d), %v", len(got), cap(got), err)
	}
	got, err = readAllSized(strings.NewReader(body), int64(len(body)))
	if err != nil || string(got) != body || cap(got) != len(body) {
		t.Fatalf("known size: %d bytes (cap %d), %v", len(got), cap(got), err)
	}
	if got, err = readAllSized(bytes.NewReader([]byte(body)), -1); err != nil || string(got) != body {
		t.Fatalf("unknown size: %d bytes, %v", len(got), err)
	}
	if _, err := readAllSized(strings.NewReader(body), int64(len(body))+1); err == nil {
		t.Error("short body: no error")
	}
	if _, err := readAllSized(strings.NewReader(body), int64(len(body))-1); err == nil {
		t.Error("long body: no error")
	}
}
