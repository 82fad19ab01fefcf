//go:build linux

package peercred

import (
	"net"
	"os"
	"testing"
)

// TestProcNetFallback finds a loopback connection's peer uid from
// /proc/net/tcp, as when sock_diag is unavailable.
func TestProcNetFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	remote, local := s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)
	for name, f := range map[string]func(src, dst *net.TCPAddr) (int, error){"sock_diag": sockDiagUID, "proc": procNetUID} {
		uid, err := f(remote, local)
		if err != nil || uid != os.Geteuid() {
			t.Errorf("%s: uid %d, %v; want %d", name, uid, err, os.Geteuid())
		}
	}
}
