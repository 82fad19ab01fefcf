package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/audit"
)

// appendRecords appends records named names to the file at path.
func appendRecords(t *testing.T, path string, names ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range names {
		if _, err := fmt.Fprintf(f, `{"time":"2026-12-06T00:00:00Z","uid":0,"front":"grpc","server":"s","method":"tools/call","name":%q,"outcome":"result","grpcCode":"OK","durationUs":1,"cache":"fetched"}`+"\n", n); err != nil {
			t.Fatal(err)
		}
	}
}

// mcpdctl audit -f loses no record to a rotation, nor to a file cut back
// in place: what the old file got after the last look is printed before
// the new file. Each look ends in flush, where the test changes the files.
func TestFollowAuditAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.FileName)
	appendRecords(t, path, "a1", "a2")
	steps := []func(){
		func() {
			// Written after the look, then rotated before the next.
			appendRecords(t, path, "a3")
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			appendRecords(t, path, "b1")
		},
		func() { appendRecords(t, path, "b2") },
		func() {
			// Cut back in place (copytruncate), then written again.
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			appendRecords(t, path, "c1")
		},
	}
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	looks := 0
	flush := func() {
		if looks < len(steps) {
			steps[looks]()
		} else {
			cancel()
		}
		looks++
	}
	emit := func(r *audit.Record, _ []byte) error {
		got = append(got, r.Name)
		return nil
	}
	if err := followAudit(ctx, path, true, time.Millisecond, emit, flush); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "a2", "a3", "b1", "b2", "c1"}; !slices.Equal(got, want) {
		t.Fatalf("followed %v, want %v", got, want)
	}
}
