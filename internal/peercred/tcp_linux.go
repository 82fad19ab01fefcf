//go:build linux

package peercred

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel's sock_diag ABI (linux/inet_diag.h), which x/sys/unix does
// not define.
const (
	inetDiagReqV2Len = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
	inetDiagUIDOff   = 64 // inet_diag_msg.idiag_uid
	inetDiagInodeOff = 68 // inet_diag_msg.idiag_inode
	nlmsgHdrLen      = 16 // struct nlmsghdr
	tcpAllStates     = 0xffffffff
)

// tcpPeerUID returns the uid owning the socket at the other end of c, a
// loopback TCP connection accepted by this process: the socket whose local
// end is c's remote address and whose remote end is c's local address. It
// asks the kernel for exactly that socket (NETLINK_SOCK_DIAG), falling back
// to /proc/net/tcp{,6}.
func tcpPeerUID(c net.Conn) (int, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return -1, fmt.Errorf("connection %T is not TCP", c)
	}
	uid, err := sockDiagUID(remote, local)
	if err == nil {
		return uid, nil
	}
	uid, perr := procNetUID(remote, local)
	if perr != nil {
		return -1, fmt.Errorf("find the owner of %s: %w; %w", remote, err, perr)
	}
	return uid, nil
}

// sockDiagUID asks for the TCP socket src→dst with an exact inet_diag
// lookup (no dump) and returns its owner's uid.
func sockDiagUID(src, dst *net.TCPAddr) (int, error) {
	uid, _, err := sockDiag(src, dst)
	return uid, err
}

// sockDiag looks up the TCP socket src→dst (sockDiagUID) and returns its
// owner's uid and its inode.
func sockDiag(src, dst *net.TCPAddr) (uid int, inode uint32, err error) {
	family, srcIP, dstIP := diagFamily(src.IP, dst.IP)
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, 0, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	// A reply that never comes must not hold the connection's handler.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return -1, 0, fmt.Errorf("sock_diag timeout: %w", err)
	}
	req := make([]byte, nlmsgHdrLen+inetDiagReqV2Len)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence number
	r := req[nlmsgHdrLen:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], tcpAllStates)
	binary.BigEndian.PutUint16(r[8:], uint16(src.Port))
	binary.BigEndian.PutUint16(r[10:], uint16(dst.Port))
	copy(r[12:28], srcIP)
	copy(r[28:44], dstIP)
	ne.PutUint32(r[48:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(r[52:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return -1, 0, fmt.Errorf("sock_diag request: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("sock_diag reply: %w", err)
	}
	if uid, err = parseDiagReply(buf[:n]); err != nil {
		return -1, 0, err
	}
	return uid, ne.Uint32(buf[nlmsgHdrLen+inetDiagInodeOff:]), nil
}

// parseDiagReply reads the uid from the reply to one exact lookup.
func parseDiagReply(b []byte) (int, error) {
	ne := binary.NativeEndian
	if len(b) < nlmsgHdrLen {
		return -1, errors.New("sock_diag: short reply")
	}
	switch ne.Uint16(b[4:]) {
	case unix.NLMSG_ERROR:
		if len(b) >= nlmsgHdrLen+4 {
			if code := int32(ne.Uint32(b[nlmsgHdrLen:])); code != 0 {
				return -1, fmt.Errorf("sock_diag: %w", syscall.Errno(-code))
			}
		}
		return -1, errors.New("sock_diag: error reply")
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(b) < nlmsgHdrLen+inetDiagMsgLen {
			return -1, errors.New("sock_diag: short socket record")
		}
		return int(ne.Uint32(b[nlmsgHdrLen+inetDiagUIDOff:])), nil
	}
	return -1, fmt.Errorf("sock_diag: unexpected reply type %d", ne.Uint16(b[4:]))
}

// diagFamily is the address family of a connection and its addresses as
// inet_diag_sockid holds them (IPv4 in the first 4 bytes).
func diagFamily(src, dst net.IP) (family byte, s, d []byte) {
	if s4, d4 := src.To4(), dst.To4(); s4 != nil && d4 != nil {
		return unix.AF_INET, s4, d4
	}
	return unix.AF_INET6, src.To16(), dst.To16()
}

// procNetUID finds the socket src→dst in /proc/net/tcp or tcp6 and returns
// its uid column.
func procNetUID(src, dst *net.TCPAddr) (int, error) {
	file := "/proc/net/tcp6"
	if src.IP.To4() != nil && dst.IP.To4() != nil {
		file = "/proc/net/tcp"
	}
	f, err := os.Open(file)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	want := [2]string{procAddr(src), procAddr(dst)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] != want[0] || fields[2] != want[1] {
			continue
		}
		return strconv.Atoi(fields[7])
	}
	if err := sc.Err(); err != nil {
		return -1, fmt.Errorf("read %s: %w", file, err)
	}
	return -1, fmt.Errorf("no socket %s→%s in %s", src, dst, file)
}

// procAddr renders a as /proc/net/tcp{,6} does: each 32-bit word of the
// address in host byte order as hex, then the port.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	var sb strings.Builder
	for i := 0; i < len(ip); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	fmt.Fprintf(&sb, ":%04X", a.Port)
	return sb.String()
}

// TCPPeerPID returns the process holding the socket at the other end of
// c, a loopback TCP connection this process accepted whose peer runs as
// uid: the socket's inode (sock_diag) among the open files of uid's
// processes. It is 0 when none is found (the socket is gone, or held by
// a process whose files this one cannot read); it costs a walk of /proc,
// so callers ask once per connection.
func TCPPeerPID(c net.Conn, uid int) int {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0
	}
	_, inode, err := sockDiag(remote, local)
	if err != nil || inode == 0 {
		return 0
	}
	return socketHolder(inode, uid)
}

// socketHolder is the process of uid with an open file that is the socket
// inode, 0 for none. This process is looked at first: a peer in it is it,
// not a child that another goroutine forked and that holds a copy of
// every file until it execs. Others go in ascending pid order, which puts
// a process before the children it forks.
func socketHolder(inode uint32, uid int) int {
	want := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	self := os.Getpid()
	if uid == os.Geteuid() && holds("/proc/self", want) {
		return self
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + p.Name()
		if st, err := os.Stat(dir); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != uid {
			continue
		}
		if holds(dir, want) {
			return pid
		}
	}
	return 0
}

// holds reports whether the process of /proc directory dir has the file
// want (a "socket:[inode]" link) open.
func holds(dir, want string) bool {
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if link, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && link == want {
			return true
		}
	}
	return false
}
