package config

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sparseFile creates a file of size bytes at path without writing them.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestReadFileRefusesUnboundedFiles checks that a path that is not a
// regular file of at most MaxFileSize bytes is refused at once, with an
// error naming the file and the reason, instead of blocking (a FIFO without
// writer) or reading without end (/dev/zero, a huge file).
func TestReadFileRefusesUnboundedFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	sparseFile(t, big, 100<<20)
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	tests := []struct {
		name, path string
		want       error
		reason     string
	}{
		{"dev_zero", "/dev/zero", ErrNotRegular, "a character device"},
		{"symlink_to_dev_zero", zeroLink, ErrNotRegular, "a character device"},
		{"fifo", fifo, ErrNotRegular, "a named pipe"},
		{"directory", dir, ErrNotRegular, "a directory"},
		{"socket", sock, nil, ""}, // open(2) of a socket fails: checked below
		{"100MB", big, ErrTooLarge, "104857600 bytes, more than the limit of 4 MiB"},
		{"missing", filepath.Join(dir, "none.json"), fs.ErrNotExist, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := ReadFile(t.Context(), tt.path)
			if tt.name == "socket" {
				// open(2) of a socket fails with ENXIO; whatever the
				// kernel says, it is an error and nothing is read.
				if err == nil {
					t.Fatalf("ReadFile(socket) = %d bytes, want an error", len(data))
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("ReadFile(%s) = %d bytes, %v; want %v", tt.path, len(data), err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not name the file and %q", err, tt.reason)
			}
		})
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	atLimit := filepath.Join(dir, "at.json")
	sparseFile(t, atLimit, MaxFileSize)
	data, err := ReadFile(t.Context(), atLimit)
	if err != nil || len(data) != MaxFileSize {
		t.Fatalf("file of exactly MaxFileSize: %d bytes, %v", len(data), err)
	}
	over := filepath.Join(dir, "over.json")
	sparseFile(t, over, MaxFileSize+1)
	if _, err := ReadFile(t.Context(), over); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("file of MaxFileSize+1: %v, want ErrTooLarge", err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.WriteFile(filepath.Join(dir, "real.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(t.Context(), link); err != nil || string(data) != "{}" {
		t.Fatalf("symlink to a regular file: %q, %v", data, err)
	}
}

// TestReadFileAbandoned checks that a read whose context is done stops with
// the context's error, which is how a shutdown abandons a reload.
func TestReadFileAbandoned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ReadFile(ctx, path); !errors.Is(err, context.Canceled) || errors.Is(err, ErrReadTimeout) {
		t.Fatalf("ReadFile with a done context: %v, want context.Canceled", err)
	}
	if _, err := Load(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a done context: %v, want context.Canceled", err)
	}
}

func TestParseRefusesTooLarge(t *testing.T) {
	data := make([]byte, MaxFileSize+1)
	if _, err := Parse("/c.json", data); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/c.json") {
		t.Fatalf("Parse of MaxFileSize+1 bytes: %v, want ErrTooLarge naming the file", err)
	}
}
