//go:build linux

package peercred

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

// acceptedLoopback is the accepted end of a loopback TCP connection this
// process dialled; both ends close when the test ends.
func acceptedLoopback(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestProcNetFallback finds a loopback connection's peer uid from
// /proc/net/tcp, as when sock_diag is unavailable.
func TestProcNetFallback(t *testing.T) {
	s := acceptedLoopback(t)
	remote, local := s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)
	for name, f := range map[string]func(src, dst *net.TCPAddr) (int, error){"sock_diag": sockDiagUID, "proc": procNetUID} {
		uid, err := f(remote, local)
		if err != nil || uid != os.Geteuid() {
			t.Errorf("%s: uid %d, %v; want %d", name, uid, err, os.Geteuid())
		}
	}
}

// TestTCPPeerPID finds the process at the other end of a loopback TCP
// connection: a shell that connected and reads until it is closed.
func TestTCPPeerPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command("bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/`+port+` && read -r _ <&3`)
	if err := cmd.Start(); err != nil {
		t.Skipf("bash: %v", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := TCPPeerPID(s, os.Geteuid()); got != cmd.Process.Pid {
		t.Errorf("peer pid %d, want the shell's %d", got, cmd.Process.Pid)
	}
	if got := TCPPeerPID(s, os.Geteuid()+1); got != 0 {
		t.Errorf("peer pid as another user's %d, want 0", got)
	}
}

// TestTCPPeerPIDSelf finds this process at the other end of a connection
// it dialled itself, even while another goroutine forks children, each of
// which holds a copy of the socket until it execs.
func TestTCPPeerPIDSelf(t *testing.T) {
	s := acceptedLoopback(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := exec.Command("true").Run(); err != nil {
				t.Errorf("true: %v", err)
				return
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	for range 50 {
		if got := TCPPeerPID(s, os.Geteuid()); got != os.Getpid() {
			t.Fatalf("peer pid %d, want this process's %d", got, os.Getpid())
		}
	}
	if got := TCPPeerPID(s, os.Geteuid()+1); got != 0 {
		t.Errorf("peer pid as another user's %d, want 0", got)
	}
}
