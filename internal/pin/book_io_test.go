//go:build unix

package pin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A pins file that is slow to read (a FIFO nobody writes yet) holds up the
// list that reads it, not the checks and lookups of the server meanwhile.
func TestSlowPinsFileHoldsUpNoCheck(t *testing.T) {
	dir := t.TempDir()
	b := NewBook(NewStore(dir))
	fifo := filepath.Join(dir, "s.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	observed := make(chan error, 1)
	go func() {
		_, err := b.Observe("s", ModeEnforce, 10, json.RawMessage(listV1))
		observed <- err
	}()
	// Observe is reading the file once the FIFO has a reader.
	w := openWriterWhenRead(t, fifo)

	checked := make(chan bool, 1)
	go func() {
		need, _ := b.Check("s", ModeEnforce, 10, "echo")
		b.Invalidate("s")
		_, _ = b.Pending("s")
		checked <- need
	}()
	select {
	case need := <-checked:
		if !need {
			t.Error("Check before the first list = no list needed")
		}
	case <-time.After(20 * time.Second):
		w.Close()
		t.Fatal("Check waited for the pins file")
	}

	pins := `{"version":1,"server":"s","tools":{}}`
	if _, err := w.WriteString(pins); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-observed; err != nil {
		t.Fatal(err)
	}
	if changes, seen := b.Pending("s"); !seen || len(changes) != 2 {
		t.Fatalf("pending after the list = %v (seen %v), want echo and add added to the empty pins", changes, seen)
	}
}

// openWriterWhenRead opens fifo for writing once a reader has it open
// (non-blocking opens fail with ENXIO until then).
func openWriterWhenRead(t *testing.T, fifo string) *os.File {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reader of %s: %v", fifo, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
