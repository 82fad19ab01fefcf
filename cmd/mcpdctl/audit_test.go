package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	got, _ := followLooks(t, path, steps...)
	if want := []string{"a1", "a2", "a3", "b1", "b2", "c1"}; !slices.Equal(got, want) {
		t.Fatalf("followed %v, want %v", got, want)
	}
}

// rotateFiles rotates the log at path as mcpd does, keeping keep files.
func rotateFiles(t *testing.T, path string, keep int) {
	t.Helper()
	os.Remove(fmt.Sprintf("%s.%d", path, keep))
	for i := keep - 1; i >= 1; i-- {
		os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1))
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
}

// followLooks runs followAudit over path, calling steps[i] at the end of
// look i, and returns the names printed and what it warned.
func followLooks(t *testing.T, path string, steps ...func()) ([]string, string) {
	t.Helper()
	var got []string
	var warned strings.Builder
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
	if err := followAudit(ctx, path, true, time.Millisecond, emit, &warned, flush); err != nil {
		t.Fatal(err)
	}
	return got, warned.String()
}

// Several rotations between two looks: every file still kept is read, in
// order, without a warning.
func TestFollowAuditSeveralRotations(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.FileName)
	appendRecords(t, path, "a1")
	got, warned := followLooks(t, path, func() {
		appendRecords(t, path, "a2")
		for _, name := range []string{"b1", "c1", "d1"} {
			rotateFiles(t, path, 10)
			appendRecords(t, path, name)
		}
	})
	if want := []string{"a1", "a2", "b1", "c1", "d1"}; !slices.Equal(got, want) || warned != "" {
		t.Fatalf("followed %v (warned %q), want %v", got, warned, want)
	}
}

// The file read last was removed (rotated past Keep) before the next
// look: what it got is still read, then the files kept, and the follower
// says that files may have been removed unread.
func TestFollowAuditWarnsOfRemovedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.FileName)
	appendRecords(t, path, "a1")
	got, warned := followLooks(t, path, func() {
		appendRecords(t, path, "a2")
		for _, name := range []string{"b1", "c1"} {
			rotateFiles(t, path, 1)
			appendRecords(t, path, name)
		}
	})
	if want := []string{"a1", "a2", "b1", "c1"}; !slices.Equal(got, want) || !strings.Contains(warned, "rotated past the files it keeps") {
		t.Fatalf("followed %v (warned %q), want %v and a warning", got, warned, want)
	}
}

// A one-time read prints every rotated file, past .64 too, oldest first.
func TestAuditReadsEveryRotatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.FileName)
	var want []string
	for i := 70; i >= 1; i-- {
		name := fmt.Sprint("r", i)
		appendRecords(t, fmt.Sprintf("%s.%d", path, i), name)
		want = append(want, name)
	}
	appendRecords(t, path, "live")
	want = append(want, "live")
	got := readOnce(t, path)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records %v…, want %d", len(got), got[:min(len(got), 3)], len(want))
	}
}

// readOnce reads the log at path once, as mcpdctl audit without -f does,
// and returns the names printed.
func readOnce(t *testing.T, path string) []string {
	t.Helper()
	var got []string
	emit := func(r *audit.Record, _ []byte) error {
		got = append(got, r.Name)
		return nil
	}
	if err := followAudit(context.Background(), path, false, time.Millisecond, emit, io.Discard, func() {}); err != nil {
		t.Fatal(err)
	}
	return got
}

// --file names a file that must exist: a mistyped path is not an empty
// log.
func TestAuditMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	r := mcpdctl(t, "--socket", "/nonexistent/mcpd.sock", "audit", "--file", missing)
	if r.code != exitFailure || !strings.Contains(r.stderr, "no such file or directory") || r.stdout != "" {
		t.Fatalf("audit --file missing: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A read that meets a rotation half done (one name missing while the
// files are shifted) still reads the older files past the gap.
func TestAuditReadsPastARotationsGap(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.FileName)
	appendRecords(t, path+".3", "old3")
	appendRecords(t, path+".2", "old2") // .1 is being renamed to .2
	appendRecords(t, path, "live")
	got := readOnce(t, path)
	if want := []string{"old3", "old2", "live"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
}
