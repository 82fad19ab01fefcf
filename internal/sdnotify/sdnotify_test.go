package sdnotify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestNotify(t *testing.T) {
	tests := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{
			name: "path socket",
			addr: func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify.sock") },
		},
		{
			name: "abstract socket",
			addr: func(t *testing.T) string {
				if runtime.GOOS != "linux" {
					t.Skip("abstract unix sockets are Linux-only")
				}
				return fmt.Sprintf("@mcpd-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
			},
		},
	}
	states := []string{Ready, Reloading, Ready + "\n" + Status("reload failed:\nbad key"), Stopping}
	want := []string{"READY=1", "RELOADING=1", "READY=1\nSTATUS=reload failed: bad key", "STOPPING=1"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.addr(t)
			ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
			if err != nil {
				t.Fatalf("listen %q: %v", addr, err)
			}
			defer ln.Close()
			t.Setenv(EnvSocket, addr)
			buf := make([]byte, 4096)
			for i, s := range states {
				if err := Notify(s); err != nil {
					t.Fatalf("Notify(%q): %v", s, err)
				}
				// Notify has returned, so the datagram is queued: the read
				// cannot block. The deadline only turns a bug into a failure.
				ln.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := ln.Read(buf)
				if err != nil {
					t.Fatalf("read datagram %d: %v", i, err)
				}
				if got := string(buf[:n]); got != want[i] {
					t.Errorf("datagram %d = %q, want %q", i, got, want[i])
				}
			}
		})
	}
}

func TestNotifyUnsetIsNoop(t *testing.T) {
	t.Setenv(EnvSocket, "")
	if err := Notify(Ready); err != nil {
		t.Errorf("Notify with NOTIFY_SOCKET unset: %v", err)
	}
}

func TestNotifyNoListener(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "absent.sock")
	t.Setenv(EnvSocket, addr)
	err := Notify(Ready)
	if err == nil {
		t.Fatal("Notify to a missing socket succeeded, want an error")
	}
	if want := fmt.Sprintf("sd_notify %q: ", addr); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q, want prefix %q", err, want)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ok", "STATUS=ok"},
		{"", "STATUS="},
		{"a\nb\r\nc\rd", "STATUS=a b c d"},
	}
	for _, tt := range tests {
		if got := Status(tt.in); got != tt.want {
			t.Errorf("Status(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
