package httpface

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpd-dev/mcpd/internal/socket"
)

// DefaultAddr is where the HTTP face listens unless told otherwise
// ("mcpd" on a phone keypad).
const DefaultAddr = "127.0.0.1:6273"

// Off is the address value that disables the HTTP face.
const Off = "off"

// Addr is a parsed listen address.
type Addr struct {
	Network string // "tcp" or "unix"
	Address string // loopback host:port, or the socket path
}

// String renders a as ParseAddr takes it.
func (a Addr) String() string {
	if a.Network == "unix" {
		return "unix:" + a.Address
	}
	return a.Address
}

// ParseAddr checks an HTTP listen address (ParseListen).
func ParseAddr(v string) (Addr, error) { return ParseListen("HTTP listen address", v) }

// ParseListen checks the listen address of one of mcpd's HTTP servers,
// called name in errors: "unix:/abs/path.sock", or "HOST:PORT" where HOST
// is a loopback address (127.0.0.0/8, ::1) or "localhost", pinned to
// 127.0.0.1 rather than resolved, so that no hosts file can point it
// elsewhere. Port 0 picks a free port. Anything that would listen beyond
// this machine is refused.
func ParseListen(name, v string) (Addr, error) {
	if path, ok := strings.CutPrefix(v, "unix:"); ok {
		if !strings.HasPrefix(path, "/") {
			return Addr{}, fmt.Errorf("invalid %s %q: want an absolute socket path after \"unix:\"", name, v)
		}
		return Addr{Network: "unix", Address: path}, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return Addr{}, fmt.Errorf("invalid %s %q: want a loopback HOST:PORT such as %s, or unix:/path/to.sock", name, v, DefaultAddr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || (p == 0 && port != "0") {
		return Addr{}, fmt.Errorf("invalid %s %q: port %q is not a number from 0 to 65535", name, v, port)
	}
	switch {
	case strings.EqualFold(host, "localhost"):
		host = "127.0.0.1"
	case host == "":
		return Addr{}, fmt.Errorf("refusing %s %q: an empty host listens on every interface; use 127.0.0.1:%s, [::1]:%s or unix:/path", name, v, port, port)
	default:
		ip := net.ParseIP(host)
		if ip == nil {
			return Addr{}, fmt.Errorf("refusing %s %q: %q is not a loopback address; use 127.0.0.1, [::1], localhost or unix:/path", name, v, host)
		}
		if !ip.IsLoopback() {
			return Addr{}, fmt.Errorf("refusing %s %q: %s is not a loopback address, and mcpd serves only this machine (127.0.0.1, [::1], localhost or unix:/path)", name, v, host)
		}
		host = ip.String()
	}
	return Addr{Network: "tcp", Address: net.JoinHostPort(host, port)}, nil
}

// ErrAddrInUse is wrapped by Listen's error when something else holds the
// address.
var ErrAddrInUse = errors.New("address already in use")

// Listen listens on a. A unix socket gets the API socket's treatment
// (socket.Listen): a directory of mode 0700 that is ours, the socket 0600, a
// live socket never replaced, a stale one removed, and the file removed on
// Close.
func Listen(a Addr) (net.Listener, error) {
	var ln net.Listener
	var err error
	if a.Network == "unix" {
		ln, err = socket.Listen(a.Address)
		if errors.Is(err, socket.ErrAlreadyListening) {
			err = fmt.Errorf("%w: %w", ErrAddrInUse, err)
		}
	} else {
		ln, err = net.Listen("tcp", a.Address)
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w (another program, or another user's mcpd, has it)", ErrAddrInUse)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("HTTP: listen on %s: %w", a, err)
	}
	return ln, nil
}

// Inherited makes a listener of f, a listening socket passed by systemd
// socket activation, and returns it with its address. The listener is a
// dup: f stays open, for another listener later. Like ParseAddr, it
// refuses a TCP socket that is not on a loopback address.
func Inherited(f *os.File) (net.Listener, Addr, error) {
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, Addr{}, fmt.Errorf("HTTP: socket from systemd: %w", err)
	}
	switch a := ln.Addr().(type) {
	case *net.UnixAddr:
		return ln, Addr{Network: "unix", Address: a.Name}, nil
	case *net.TCPAddr:
		if a.IP.IsLoopback() {
			return ln, Addr{Network: "tcp", Address: a.String()}, nil
		}
	}
	ln.Close()
	return nil, Addr{}, fmt.Errorf("refusing the HTTP socket from systemd on %s: not a loopback address, and mcpd serves MCP hosts only on this machine (ListenStream=127.0.0.1:PORT, [::1]:PORT or a path)", ln.Addr())
}

// BaseURL is the URL hosts reach a listener on: http://HOST:PORT with the
// bound port, or http://localhost for a unix socket (which curl reaches
// with --unix-socket).
func BaseURL(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "http://localhost"
	}
	return "http://" + ln.Addr().String()
}
