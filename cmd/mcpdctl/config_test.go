package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConfigFileBounded checks that "config check FILE" and "config import
// FILE" read FILE with mcpd's bounded reader: a FIFO, /dev/zero or a 100 MB
// file is refused at once with an error naming the file and the reason,
// where a plain read would block forever or exhaust memory.
func TestConfigFileBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	f.Close()
	nosock := filepath.Join(dir, "none.sock")
	for _, tt := range []struct {
		name, path, reason string
	}{
		{"dev_zero", "/dev/zero", "not a regular file: it is a character device"},
		{"fifo", fifo, "not a regular file: it is a named pipe (FIFO)"},
		{"100MB", big, "file too large: 104857600 bytes, more than the limit of 4 MiB"},
	} {
		for _, action := range []string{"check", "import"} {
			t.Run(tt.name+"_"+action, func(t *testing.T) {
				r := mcpdctl(t, "--socket", nosock, "config", action, tt.path)
				want := "mcpdctl: read config " + tt.path + ": " + tt.reason + "\n"
				if r.code != exitFailure || r.stderr != want || r.stdout != "" {
					t.Errorf("config %s %s: exit %d, stdout %q, stderr %q; want exit 1 and stderr %q",
						action, tt.path, r.code, r.stdout, r.stderr, want)
				}
				if strings.Contains(r.stderr, "\x00") {
					t.Errorf("stderr holds file content")
				}
			})
		}
	}
}
