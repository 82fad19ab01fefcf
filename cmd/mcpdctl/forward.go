package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A socket file that exists but where nothing answers is either a stale
// socket (mcpd died without removing it) or a forwarded one whose forward
// is gone: `ssh -L local.sock:remote.sock` leaves local.sock behind when
// the ssh session ends, and a live forward whose other end has no mcpd
// accepts and closes at once. mcpdctl cannot tell the first two apart
// (both refuse), so its message names both; the third it can, from the
// listener's pid.

// probeDialTimeout bounds the probe of a socket that did not answer.
const probeDialTimeout = time.Second

// socketListener says who holds the listening end of the Unix socket at
// path: accepted is false when connecting failed (ECONNREFUSED: nothing
// listens), else pid is the listener's process id as the kernel recorded
// it (0: not visible from here, another pid namespace) and comm its
// command name ("" when unknown).
func socketListener(path string) (accepted bool, pid int, comm string) {
	conn, err := net.DialTimeout("unix", path, probeDialTimeout)
	if err != nil {
		return false, 0, ""
	}
	defer conn.Close()
	pid = peerPID(conn)
	if pid > 0 {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
			comm = strings.TrimSpace(string(b))
		}
	}
	return true, pid, comm
}

// isSSH reports whether comm names an OpenSSH process that holds a
// forwarded socket: ssh (-L), sshd or sshd-session (-R).
func isSSH(comm string) bool {
	return comm == "ssh" || comm == "sshd" || strings.HasPrefix(comm, "sshd-")
}

// deadSocket is the error for the socket at c.socket, which exists and is
// ours but where mcpd did not answer.
func (c *cli) deadSocket() error {
	accepted, pid, comm := socketListener(c.socket)
	if accepted && isSSH(comm) {
		return fmt.Errorf("nothing answers at %s: it is an ssh forward (%s, pid %d) and nothing answers at its other end: is mcpd running there, and is the forward's remote path its socket?", c.socket, comm, pid)
	}
	start := mcpdCommand()
	if c.socketFlag != "" {
		start += " --socket " + c.socket
	} else {
		start += " (or: systemctl --user start mcpd)"
	}
	if accepted && comm == "mcpd" {
		// mcpd itself takes the connection and drops it: it is stopping.
		return fmt.Errorf("mcpd is not running: mcpd (pid %d) is stopping and closes every connection to %s; start it again with: %s", pid, c.socket, start)
	}
	if accepted {
		// Something takes the connection and drops it: a forward whose
		// other end is gone, seen from another pid namespace.
		return fmt.Errorf("nothing answers at %s: it accepts connections and closes them; if it is an ssh forward or a mounted socket, is the ssh session still up and mcpd running at its other end?", c.socket)
	}
	return fmt.Errorf("nothing answers at %s: if it is an ssh forward, is the ssh session still up? If not, mcpd is not running; start it with: %s", c.socket, start)
}

// peerPID is the pid of conn's peer (0: unknown).
func peerPID(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	pid, err := rawPeerPID(raw)
	if err != nil {
		return 0
	}
	return pid
}

// localDaemon reports whether the mcpd at c.socket, whose pid is pid as it
// reports it, is the very process listening on the socket here: not so
// through an ssh forward (the listener is ssh or sshd) nor through a
// socket mounted from another pid namespace (a devcontainer's host).
func (c *cli) localDaemon(pid int64) bool {
	accepted, listener, _ := socketListener(c.socket)
	return !accepted || !havePeerPID || int64(listener) == pid
}
