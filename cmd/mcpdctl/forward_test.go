package main

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A socket that accepts and closes at once (a forward whose other end is
// gone, seen from where the listener's pid says nothing) is named as such,
// not as a daemon that is not running.
func TestAcceptThenCloseSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcpd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r := mcpdctl(t, "--socket", sock, "status")
	want := "mcpdctl: nothing answers at " + sock + ": it accepts connections and closes them; if it is an ssh forward or a mounted socket, is the ssh session still up and mcpd running at its other end?\n"
	if r.code != exitFailure || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
}

// localDaemon tells mcpd listening here (the socket's listener is mcpd)
// from mcpd behind a forward (the listener is ssh, sshd, or out of sight).
func TestLocalDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcpd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	c := &cli{socket: sock}
	if !c.localDaemon(int64(os.Getpid())) {
		t.Error("the listener's own pid: not local")
	}
	if runtime.GOOS == "linux" && c.localDaemon(int64(os.Getpid())+1) {
		t.Error("another pid than the listener's: local")
	}
	ln.Close()
	if !c.localDaemon(1) {
		t.Error("nothing listening: cannot tell, must count as local")
	}
}

func TestIsSSH(t *testing.T) {
	for comm, want := range map[string]bool{"ssh": true, "sshd": true, "sshd-session": true, "mcpd": false, "sshfs": false, "": false} {
		if isSSH(comm) != want {
			t.Errorf("isSSH(%q) = %v", comm, !want)
		}
	}
}
